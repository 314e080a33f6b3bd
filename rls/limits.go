package rls

import (
	"errors"
	"fmt"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// The bounds on one request. Envoy sends one descriptor per rate limit
// action list of the route, a few entries each, and values from the
// request's headers, whose total Envoy caps at 60 KiB by default; the
// bounds sit well above what Envoy can send, so they refuse only requests
// that did not come from an Envoy filter, and keep what a request can make
// the service count and hash bounded.
const (
	// MaxRequestBytes bounds an encoded request; a larger one is refused
	// with RESOURCE_EXHAUSTED before it is decoded. It is also what a call
	// whose client never finishes it can hold (see [MaxStreams]).
	MaxRequestBytes = 256 << 10
	// MaxDescriptors bounds a request's descriptors.
	MaxDescriptors = 128
	// MaxEntries bounds one descriptor's entries.
	MaxEntries = 32
	// MaxKeyBytes bounds an entry's key, which comes from Envoy's
	// configuration, not from the request.
	MaxKeyBytes = 1024
	// MaxValueBytes bounds an entry's value: more than Envoy forwards of
	// all a request's headers by default.
	MaxValueBytes = 64 << 10
	// maxHits is what a hits_addend counts as at most: past every limit
	// (a limit is at most 2^32-1), and small, so that a window's count
	// reaches the stores' 2^63, past which every count on the key fails,
	// only after 2^24 requests on one key in one window, each with all
	// its MaxDescriptors at the cap.
	maxHits = 1 << 32
)

// errMalformed is wrapped by every refusal of a request's shape.
var errMalformed = errors.New("rls: malformed request")

// reasons of refused requests, the values of admit.rls.refused's reason.
const (
	reasonNoDomain      = "empty_domain"
	reasonNoDescriptors = "no_descriptors"
	reasonDescriptors   = "too_many_descriptors"
	reasonEntries       = "too_many_entries"
	reasonKeyBytes      = "key_too_long"
	reasonValueBytes    = "value_too_long"
	reasonLimitUnit     = "bad_limit_unit"
	reasonUnknownDomain = "unknown_domain"
	reasonHitsClamped   = "hits_clamped"
)

var reasons = []string{reasonNoDomain, reasonNoDescriptors, reasonDescriptors, reasonEntries,
	reasonKeyBytes, reasonValueBytes, reasonLimitUnit, reasonUnknownDomain, reasonHitsClamped}

// malformed is a refused request and the reason it is counted under.
type malformed struct {
	reason string
	msg    string
}

func (m *malformed) Error() string { return "rls: malformed request: " + m.msg }
func (m *malformed) Unwrap() error { return errMalformed }

// check refuses a request whose shape is outside the bounds, or that
// envoyproxy/ratelimit refuses: no domain, no descriptors.
func check(req *pb.RateLimitRequest) error {
	if req.GetDomain() == "" {
		return &malformed{reasonNoDomain, "rate limit domain must not be empty"}
	}
	ds := req.GetDescriptors()
	if len(ds) == 0 {
		return &malformed{reasonNoDescriptors, "rate limit descriptor list must not be empty"}
	}
	if len(ds) > MaxDescriptors {
		return &malformed{reasonDescriptors, fmt.Sprintf("%d descriptors, at most %d", len(ds), MaxDescriptors)}
	}
	for i, d := range ds {
		es := d.GetEntries()
		if len(es) > MaxEntries {
			return &malformed{reasonEntries, fmt.Sprintf("descriptor %d: %d entries, at most %d", i, len(es), MaxEntries)}
		}
		for j, e := range es {
			if len(e.GetKey()) > MaxKeyBytes {
				return &malformed{reasonKeyBytes, fmt.Sprintf("descriptor %d entry %d: key of %d bytes, at most %d", i, j, len(e.GetKey()), MaxKeyBytes)}
			}
			if len(e.GetValue()) > MaxValueBytes {
				return &malformed{reasonValueBytes, fmt.Sprintf("descriptor %d entry %d: value of %d bytes, at most %d", i, j, len(e.GetValue()), MaxValueBytes)}
			}
		}
	}
	return nil
}

// hitsAddends returns what each descriptor adds, as envoyproxy/ratelimit
// reads it: the descriptor's own hits_addend when set (0 only looks), else
// the request's, where 0 means 1. It reports whether one was clamped to
// maxHits.
func hitsAddends(req *pb.RateLimitRequest, out []uint64) ([]uint64, bool) {
	clamped := false
	for _, d := range req.GetDescriptors() {
		n := uint64(max(1, req.GetHitsAddend()))
		if h := d.GetHitsAddend(); h != nil {
			n = h.GetValue()
		}
		if n > maxHits {
			n, clamped = maxHits, true
		}
		out = append(out, n)
	}
	return out, clamped
}
