package server

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/netip"
	"net/textproto"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"golang.org/x/net/http/httpguts"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
)

// extAuthzServiceName is the gRPC service --grpc-listen serves, as health
// checks name it.
const extAuthzServiceName = "envoy.service.auth.v3.Authorization"

// extAuthz answers Envoy's ext_authz Check with admit auth's one decision
// (authFront.decide). Envoy tells the original request in the call's
// attributes rather than in forwarding headers, and the client in its
// source address, which admit believes only from a --trusted-proxy caller,
// as it believes a forward-auth request only from one.
type extAuthz struct {
	authv3.UnimplementedAuthorizationServer
	a *authFront
}

func (x *extAuthz) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	caller, ok := peer.FromContext(ctx)
	if !ok || caller.Addr == nil || !x.a.trusts(caller.Addr.String()) {
		return checkResponse(x.a.refuseBefore(nil, errUntrusted)), nil
	}
	orig, err := checkedRequest(req)
	if err != nil {
		return checkResponse(x.a.refuseBefore(nil, errForwarded)), nil
	}
	return checkResponse(x.a.decide(ctx, orig)), nil
}

// errCheck refuses a CheckRequest admit cannot read as one request.
var errCheck = errors.New("the CheckRequest does not tell one request")

// checkedRequest is the original request a CheckRequest tells of: its
// method, path (the request target, query included), host and scheme, told
// again by the pseudo-headers Envoy puts among the headers, which must
// agree; its fields; and as its peer the source address, the client as
// Envoy saw it, so that an X-Forwarded-For among the fields is followed
// only when the source is itself a --trusted-proxy.
func checkedRequest(req *authv3.CheckRequest) (*http.Request, error) {
	attrs := req.GetAttributes()
	h := attrs.GetRequest().GetHttp()
	if h == nil {
		return nil, errCheck
	}
	source, err := sourceOf(attrs.GetSource())
	if err != nil {
		return nil, err
	}
	fields, err := checkFields(h)
	if err != nil {
		return nil, err
	}
	method, target, host, scheme := h.GetMethod(), h.GetPath(), h.GetHost(), h.GetScheme()
	for _, line := range []struct {
		name  string
		field *string
	}{{":method", &method}, {":path", &target}, {":authority", &host}, {"Host", &host}, {":scheme", &scheme}} {
		vs, ok := fields[line.name]
		if !ok {
			continue
		}
		delete(fields, line.name)
		switch {
		case len(vs) != 1:
			return nil, errCheck
		case *line.field == "":
			*line.field = vs[0]
		case *line.field != vs[0]:
			return nil, errCheck // two tellings of one request: neither is believed
		}
	}
	for name := range fields {
		if strings.HasPrefix(name, ":") {
			return nil, errCheck // a pseudo-header admit does not read (:protocol): a request it cannot judge
		}
	}
	if scheme != "" && scheme != "http" && scheme != "https" {
		return nil, errCheck
	}
	dropHopFields(fields) // about Envoy's hop, as a front's forward-auth request's are
	told := &http.Request{Header: fields, RemoteAddr: source.String()}
	told.Proto, told.ProtoMajor, told.ProtoMinor = protoOf(h.GetProtocol())
	c := new(http.Request)
	return c, originalRequest(c, told, method, target, host, scheme)
}

// sourceOf is the address and port of Envoy's downstream peer.
func sourceOf(p *authv3.AttributeContext_Peer) (netip.AddrPort, error) {
	sa := p.GetAddress().GetSocketAddress()
	a, err := netip.ParseAddr(sa.GetAddress())
	if err != nil || sa.GetPortValue() > 65535 {
		return netip.AddrPort{}, errCheck
	}
	return netip.AddrPortFrom(a, uint16(sa.GetPortValue())), nil
}

// protoOf reads the protocol Envoy names ("HTTP/1.1", "HTTP/2", "HTTP/3");
// HTTP/1.1 when it names none admit knows.
func protoOf(p string) (string, int, int) {
	if major, minor, ok := http.ParseHTTPVersion(p); ok {
		return p, major, minor
	}
	switch p {
	case "HTTP/2":
		return p, 2, 0
	case "HTTP/3":
		return p, 3, 0
	}
	return "HTTP/1.1", 1, 1
}

// checkFields reads the request's fields, pseudo-headers among them:
// Envoy's headers map, each name's lines joined by commas, or header_map,
// a line each, which it sends instead with encode_raw_headers. A name in
// both must tell the same values in both; every name and value must be one
// HTTP allows.
func checkFields(h *authv3.AttributeContext_HttpRequest) (http.Header, error) {
	fields := make(http.Header)
	for _, hv := range h.GetHeaderMap().GetHeaders() {
		v := hv.GetValue()
		if raw := hv.GetRawValue(); raw != nil {
			if v != "" && v != string(raw) {
				return nil, errCheck
			}
			v = string(raw)
		}
		if err := addField(fields, hv.GetKey(), v); err != nil {
			return nil, err
		}
	}
	fromMap := len(fields) > 0
	for name, v := range h.GetHeaders() {
		if vs, ok := fields[fieldName(name)]; ok && fromMap {
			if !slices.Equal(listOf(vs...), listOf(v)) {
				return nil, errCheck
			}
			continue
		}
		if err := addField(fields, name, v); err != nil {
			return nil, err
		}
	}
	return fields, nil
}

// addField adds a line of name to fields, if both are ones HTTP allows.
func addField(fields http.Header, name, v string) error {
	if !httpguts.ValidHeaderFieldName(strings.TrimPrefix(name, ":")) || !httpguts.ValidHeaderFieldValue(v) {
		return errCheck
	}
	key := fieldName(name)
	fields[key] = append(fields[key], v)
	return nil
}

// fieldName is name as http.Header keys it; a pseudo-header keeps its
// spelling.
func fieldName(name string) string {
	if strings.HasPrefix(name, ":") {
		return strings.ToLower(name)
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// listOf splits lines of a list-valued field into its elements, as a
// recipient reads them (RFC 9110, section 5.3), so that lines and the one
// line Envoy joins them into compare equal.
func listOf(lines ...string) []string {
	var elems []string
	for _, line := range lines {
		for e := range strings.SplitSeq(line, ",") {
			elems = append(elems, strings.Trim(e, " \t"))
		}
	}
	return elems
}

// checkResponse is ans as Envoy acts on it. Admitted: OK, with Admit-Status
// set on the request to the app (replacing any the client sent) and the
// door's other fields (RateLimit with --policy-headers) added to the answer
// to the client. Refused: a code for the status, and the refusal the client
// gets: its status, fields and body.
func checkResponse(ans authAnswer) *authv3.CheckResponse {
	header := ans.header()
	if ans.admitted {
		ok := new(authv3.OkHttpResponse)
		for _, name := range slices.Sorted(maps.Keys(header)) {
			opt := headerOption(name, header[name])
			if name == admitStatus {
				ok.Headers = append(ok.Headers, opt)
			} else {
				ok.ResponseHeadersToAdd = append(ok.ResponseHeadersToAdd, opt)
			}
		}
		return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(codes.OK)},
			HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: ok}}
	}
	denied := &authv3.DeniedHttpResponse{Status: &typev3.HttpStatus{Code: typev3.StatusCode(ans.status)}, Body: string(ans.body)}
	for _, name := range slices.Sorted(maps.Keys(header)) {
		denied.Headers = append(denied.Headers, headerOption(name, header[name]))
	}
	return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(checkCode(ans.status)), Message: ans.outcome},
		HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: denied}}
}

// headerOption sets name to its values, joined into one line so that a
// second line cannot replace the first, over any the request or answer has.
func headerOption(name string, vs []string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: strings.ToLower(name), Value: strings.Join(vs, ", ")},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}
}

// checkCode is the code of a refusal answered with status, as google.rpc.Code
// maps HTTP statuses. Envoy acts on OK alone; the rest names the refusal in
// its logs and in a gRPC client's terms.
func checkCode(status int) codes.Code {
	switch status {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusConflict:
		return codes.Aborted
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	}
	if status >= 500 {
		return codes.Internal
	}
	return codes.PermissionDenied
}
