module github.com/admitgo/admit/internal/testrouter/gorilla

go 1.26.0

require github.com/gorilla/mux v1.8.1
