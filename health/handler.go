package health

import (
	"net/http"
	"net/url"
	"strconv"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
)

// Handler returns an HTTP handler for load balancer and orchestrator probes
// that do not speak gRPC: it asks checker about the service named by the
// ?service= query parameter (empty, the whole server, when absent) and answers
//
//   - 200 with the body "serving" when the status is SERVING,
//   - 503 with "not_serving" or "unknown" for any other status, and when the
//     checker fails (the error is not shown: it may name internal hosts),
//   - 404 "unknown service" when the checker answers with a Connect NotFound
//     error, as grpchealth.StaticChecker does for names it was not given,
//   - 405 for methods other than GET and HEAD, 400 for a malformed query.
//
// Every answer carries Cache-Control: no-store, so no cache between the probe
// and the server can hide a change. The handler does not look at the path:
// mount it where probes look, usually "GET /healthz" (which matches HEAD too).
// Put it in front of a [Cached] checker so that probes cost no more than a
// map lookup.
func Handler(checker grpchealth.Checker) http.Handler {
	if checker == nil {
		panic("health: Handler: nil checker")
	}
	return handler{checker}
}

type handler struct {
	checker grpchealth.Checker
}

// reply is a prepared answer: header values are built once, so answering
// allocates nothing beyond the check itself.
type reply struct {
	code   int
	body   []byte
	length []string
}

func newReply(code int, body string) reply {
	return reply{code, []byte(body), []string{strconv.Itoa(len(body))}}
}

var (
	replyServing    = newReply(http.StatusOK, "serving\n")
	replyNotServing = newReply(http.StatusServiceUnavailable, "not_serving\n")
	replyUnknown    = newReply(http.StatusServiceUnavailable, "unknown\n")
	replyNoService  = newReply(http.StatusNotFound, "unknown service\n")
	replyBadQuery   = newReply(http.StatusBadRequest, "bad query\n")
	replyBadMethod  = newReply(http.StatusMethodNotAllowed, "method not allowed\n")

	noStore   = []string{"no-store"}
	textPlain = []string{"text/plain; charset=utf-8"}
	noSniff   = []string{"nosniff"}
	getHead   = []string{"GET, HEAD"}
)

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = getHead
		send(w, r, replyBadMethod)
		return
	}
	var service string
	if r.URL.RawQuery != "" {
		query, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			send(w, r, replyBadQuery)
			return
		}
		service = query.Get("service")
	}
	res, err := h.checker.Check(r.Context(), &grpchealth.CheckRequest{Service: service})
	switch {
	case err != nil && connect.CodeOf(err) == connect.CodeNotFound:
		send(w, r, replyNoService)
	case err != nil || res == nil:
		send(w, r, replyUnknown)
	case res.Status == grpchealth.StatusServing:
		send(w, r, replyServing)
	case res.Status == grpchealth.StatusNotServing:
		send(w, r, replyNotServing)
	default:
		send(w, r, replyUnknown)
	}
}

func send(w http.ResponseWriter, r *http.Request, rep reply) {
	h := w.Header()
	h["Cache-Control"] = noStore
	h["Content-Type"] = textPlain
	h["X-Content-Type-Options"] = noSniff
	h["Content-Length"] = rep.length
	w.WriteHeader(rep.code)
	if r.Method != http.MethodHead {
		w.Write(rep.body)
	}
}
