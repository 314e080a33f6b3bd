package quota

import "github.com/admitgo/admit/internal/meter"

// MeterName is the name of the OpenTelemetry meter every admit package
// reports on.
//
// Deprecated: the name is always "github.com/admitgo/admit"; this constant
// will be removed.
const MeterName = meter.Name
