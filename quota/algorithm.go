package quota

import "fmt"

// Algorithm selects how a [Rule] counts. Its text is the spelling of
// admit's files: "algorithm: fixed-window" or "token-bucket" in the proxy's
// config file and in a rate_limit of admit rls.
type Algorithm uint8

const (
	// FixedWindow counts calls per aligned window of Rule.Window. It is the
	// zero value.
	FixedWindow Algorithm = iota
	// TokenBucket refills Rule.Limit tokens per Rule.Window continuously
	// and holds at most Rule.Burst. The stores keep it as one timestamp per
	// subject, the generic cell rate algorithm (GCRA).
	TokenBucket
)

// GCRA is TokenBucket's older name, after the arithmetic the stores keep
// a token bucket with.
//
// Deprecated: use TokenBucket.
const GCRA = TokenBucket

// algorithmNames are the algorithms' text, by value.
var algorithmNames = [...]string{FixedWindow: "fixed-window", TokenBucket: "token-bucket"}

// olderAlgorithmNames are String's spellings before it wrote the files'
// (a stored or logged algorithm, a dump of admit rls's configuration);
// ParseAlgorithm still reads them.
var olderAlgorithmNames = map[string]Algorithm{"fixed_window": FixedWindow, "gcra": TokenBucket}

// String returns "fixed-window" or "token-bucket".
func (a Algorithm) String() string {
	if int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm reads an algorithm as String writes it, or in its older
// spelling ("fixed_window", "gcra"). It is the one reader of the
// algorithm's text for every file that names one.
func ParseAlgorithm(s string) (Algorithm, error) {
	for a, name := range algorithmNames {
		if s == name {
			return Algorithm(a), nil
		}
	}
	if a, ok := olderAlgorithmNames[s]; ok {
		return a, nil
	}
	return 0, fmt.Errorf("quota: unknown algorithm %q: want %v or %v", s, FixedWindow, TokenBucket)
}
