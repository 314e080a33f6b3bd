package storeurl_test

import (
	"fmt"

	"github.com/admitgo/admit/server/storeurl"
)

// A store URL is printed only redacted, and one whose password holds an
// unescaped '/' is refused rather than read as a host and a path.
func ExampleParse() {
	s, err := storeurl.Parse("redis+cluster://:s3cret@cache-a:7000?addr=cache-b:7000")
	fmt.Println(s.Kind, storeurl.Redact(s.URL), err)
	_, err = storeurl.Parse("postgres://admit:s3/cret@db/admit")
	fmt.Println(err)
	// Output:
	// redis redis+cluster://:xxxxx@cache-a:7000?addr=cache-b:7000 <nil>
	// not a valid URL: percent-encode any '/', '?', '#', '@', ';' or space in the user name, the password and the parameters
}
