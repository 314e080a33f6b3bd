package quota

import (
	"errors"

	"github.com/admitgo/admit/internal/subject"
)

// SubjectLen is the length of every subject [Subject] returns.
const SubjectLen = subject.Len

// ErrSubject reports a subject that did not come from [Subject]; stores refuse
// such a call with an error wrapping it, which never repeats the subject.
var ErrSubject = errors.New("quota: subject must come from quota.Subject (32 lowercase hex characters); call quota.Subject on the raw identifier")

// Subject turns raw identifying material (a token, an email address, a client
// key) into the subject stores count by: the first 32 lowercase hex characters
// of its SHA-256. The same input always gives the same subject.
func Subject(raw string) string {
	return subject.Of(raw)
}
