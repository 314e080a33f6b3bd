package quota

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// SubjectLen is the length of every subject [Subject] returns.
const SubjectLen = 32

// ErrSubject reports a subject that did not come from [Subject]; stores refuse
// such a call with an error wrapping it, which never repeats the subject.
var ErrSubject = errors.New("quota: subject must come from quota.Subject (32 lowercase hex characters); call quota.Subject on the raw identifier")

// Subject turns raw identifying material (a token, an email address, a client
// key) into the subject stores count by: the first 32 lowercase hex characters
// of its SHA-256. The same input always gives the same subject.
func Subject(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:SubjectLen/2])
}
