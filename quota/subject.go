package quota

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// SubjectLen is the length of every subject [Subject] returns.
const SubjectLen = 32

// ErrSubject reports a subject that did not come from [Subject].
var ErrSubject = errors.New("quota: subject must come from quota.Subject (32 lowercase hex characters); call quota.Subject on the raw identifier")

// Subject turns raw identifying material (a token, an email address, a client
// key) into the subject stores count by: the first 32 lowercase hex characters
// of its SHA-256. The same input always gives the same subject.
func Subject(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:SubjectLen/2])
}

// CheckSubject returns an error wrapping [ErrSubject] unless s has the form
// [Subject] returns. Stores call it before touching any key; the error never
// repeats the rejected value, which may be raw identifying material.
func CheckSubject(s string) error {
	if len(s) != SubjectLen {
		return fmt.Errorf("%w: got %d characters", ErrSubject, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%w: character %d is not lowercase hex", ErrSubject, i)
		}
	}
	return nil
}

// Check validates a call before a store counts it: the rule, the subject and
// the cost n (0 or more). Stores return its error with a refused decision,
// whatever their failure policy.
func Check(rule Rule, subject string, n int) error {
	if err := rule.Validate(); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%w %q: cost %d, want 0 or more", ErrRule, rule.Name, n)
	}
	return CheckSubject(subject)
}
