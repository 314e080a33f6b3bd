module github.com/admitgo/admit/internal/testrouter/gorilla

go 1.26.0

require (
	github.com/admitgo/admit v0.0.0
	github.com/gorilla/mux v1.8.1
)

// The upstream package comes from the main module as it is in this tree.
replace github.com/admitgo/admit => ../../..
