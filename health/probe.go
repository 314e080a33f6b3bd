package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
)

// ProbeTimeout bounds each probe of an [HTTP] checker, whatever the client's
// own timeout.
const ProbeTimeout = 2 * time.Second

// userAgent names the probe in the upstream's access logs.
const userAgent = "admit-health"

// drainLimit is how much of a probe's response body is read so that the
// connection can be reused; a longer body closes the connection instead.
const drainLimit = 4 << 10

// HTTP returns a checker that probes an upstream's own health endpoint with a
// GET to rawURL: a 2xx answer within [ProbeTimeout] is SERVING; any other
// answer, a redirect (which is not followed), a refused connection or a
// timeout is NOT_SERVING. Put it behind [Cached] so that probes of the server
// do not each become a request to the upstream.
//
// The checker knows one service, the empty name; any other name is answered
// with a Connect NotFound error without a request. A failed probe is a status,
// not an error, with one exception: when the caller's context ends first, its
// error is returned, so that [Cached] does not keep a status nobody measured.
//
// A nil client means a client of its own that shares http.DefaultTransport's
// settings. A client's CheckRedirect is replaced so that redirects are never
// followed; its Timeout, if shorter than ProbeTimeout, applies. rawURL must be
// an absolute http or https URL; the error names it otherwise. The checker is
// safe for concurrent use.
//
// When the upstream has no health endpoint, use grpchealth.NewStaticChecker()
// instead: it answers SERVING while the process runs.
func HTTP(client *http.Client, rawURL string) (grpchealth.Checker, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("health: probe URL %q: %w", rawURL, errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("health: probe URL %q: scheme must be http or https", rawURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("health: probe URL %q: no host", rawURL)
	}
	var c http.Client
	if client != nil {
		c = *client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &prober{client: &c, url: u.String()}, nil
}

type prober struct {
	client *http.Client
	url    string
}

var errUnknownService = errors.New("health: unknown service")

func (p *prober) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if req.Service != "" {
		return nil, connect.NewError(connect.CodeNotFound, errUnknownService)
	}
	status, err := p.probe(ctx)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return &grpchealth.CheckResponse{Status: status}, nil
}

func (p *prober) probe(ctx context.Context) (grpchealth.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return grpchealth.StatusNotServing, err
	}
	req.Header.Set("User-Agent", userAgent)
	res, err := p.client.Do(req)
	if err != nil {
		return grpchealth.StatusNotServing, err
	}
	defer res.Body.Close()
	io.CopyN(io.Discard, res.Body, drainLimit)
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return grpchealth.StatusNotServing, nil
	}
	return grpchealth.StatusServing, nil
}
