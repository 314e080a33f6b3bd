package quota_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/admitgo/admit/quota"
)

func ExampleSubject() {
	// Stores count by a hash of the raw identifier, never the identifier. The
	// hash has no key, so every replica and every release computes the same
	// subject for one identifier.
	subject := quota.Subject("user@example.com")
	fmt.Println(subject)
	fmt.Println(len(subject) == quota.SubjectLen)
	fmt.Println(subject == quota.Subject("other@example.com"))
	// Output:
	// b4c9a289323b21a01c3e940f150eb9b8
	// true
	// false
}

func ExampleRule_Validate() {
	signup := quota.Rule{Name: "signup", Limit: 5, Window: time.Hour}
	fmt.Println(signup.Validate())
	login := quota.Rule{Name: "login", Limit: 10, Window: time.Minute, Algorithm: quota.TokenBucket, Burst: -1}
	err := login.Validate()
	fmt.Println(errors.Is(err, quota.ErrRule))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// quota: invalid rule "login": Burst -1, want 0 (Limit) or more
}

func ExampleFailure_Fail() {
	// A store that cannot reach its server decides by its policy.
	rule := quota.Rule{Name: "signup", Limit: 5, Window: time.Hour}
	down := errors.New("connection refused")
	closed, _ := quota.FailClosed.Fail(rule, down)
	open, _ := quota.FailOpen.Fail(rule, down)
	fmt.Printf("fail closed: allowed=%v retry after %v\n", closed.Allowed, closed.RetryAfter)
	fmt.Printf("fail open: allowed=%v remaining=%d\n", open.Allowed, open.Remaining)
	// Output:
	// fail closed: allowed=false retry after 1h0m0s
	// fail open: allowed=true remaining=5
}

func ExampleRuleError() {
	rule := quota.Rule{Name: "signup", Limit: 5}
	// A caller that reports the refusal in its own words reads the value:
	// which rule, and why, without parsing the message.
	var re *quota.RuleError
	if err := rule.Validate(); errors.As(err, &re) {
		fmt.Printf("rule %s: %s\n", re.Rule, re.Reason)
		fmt.Println(errors.Is(err, quota.ErrRule))
	}
	// Output:
	// rule signup: Window 0s, want a positive duration
	// true
}

func ExampleParseFailure() {
	// A flag's value becomes the one failure type; the zero value stands
	// for the front's default.
	f, err := quota.ParseFailure("open")
	fmt.Println(f, err)
	fmt.Println(quota.FailDefault.Or(quota.FailClosed))
	_, err = quota.ParseFailure("fail-open")
	fmt.Println(err)
	// Output:
	// open <nil>
	// closed
	// quota: store failure "fail-open": want error, closed, open or local
}
