package rls

import "connectrpc.com/connect"

// invalidArgument is the answer to a request the service refuses.
func invalidArgument(err error) error { return connect.NewError(connect.CodeInvalidArgument, err) }

// unavailable is the answer to a request the service cannot decide.
func unavailable(err error) error { return connect.NewError(connect.CodeUnavailable, err) }
