// Package meter holds what admit's packages share about their OpenTelemetry
// instruments.
package meter

// Name is the name of the OpenTelemetry meter every admit package uses.
const Name = "github.com/admitgo/admit"
