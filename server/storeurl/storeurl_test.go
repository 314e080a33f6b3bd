package storeurl

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestRedisURLForms parses the URL forms docs/quota.md gives, and refuses
// what go-redis's parsers refuse, at startup.
func TestRedisURLForms(t *testing.T) {
	for _, tt := range []struct {
		url, err string
	}{
		{"redis://:pw@cache:6379/2", ""},
		{"rediss://cache:6380", ""},
		{"redis+cluster://:pw@a:7000?addr=b:7001&addr=c:7002", ""},
		{"redis+sentinel://s1:26379?master_name=admit&addr=s2:26379&password=pw", ""},
		{"redis+cluster://a:7000?adr=b:7001", "unexpected option: adr"},
		{"redis+sentinel://s1:26379?addr=s2:26379", "needs master_name="},
		{"redis://cache:6379/x", "invalid database number"},
	} {
		_, err := parseRedis(tt.url)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: got %v, want %q", tt.url, err, tt.err)
		}
	}
	o, err := parseRedis("redis+cluster://a:7000?addr=b:7001")
	if err != nil || len(o.cluster.Addrs) != 2 {
		t.Errorf("cluster seeds: got %+v, %v, want a:7000 and b:7001", o.cluster, err)
	}
}

// TestRedact masks every secret of a URL Parse takes, keeping the rest as
// given, and shows nothing of one it refuses: neither its password nor
// the parameters after it.
func TestRedact(t *testing.T) {
	const refused = "://(not shown: not a valid URL)"
	tests := []struct {
		name, in, want string
	}{
		{"no userinfo", "redis://cache:6379/0", "redis://cache:6379/0"},
		{"user only", "postgres://admit@db/admit", "postgres://admit@db/admit"},
		{"password", "postgres://admit:pw@db/admit", "postgres://admit:xxxxx@db/admit"},
		{"at sign in password", "redis://:p@ss@cache:6379", "redis" + refused},
		{"at sign in a PostgreSQL password", "postgres://admit:p@S3cret@127.0.0.1:5432/test", "postgres" + refused},
		{"one slash short", "postgres:/admit:S3cret@db/admit", "(not shown: not a store URL)"},
		{"a word", "mysql", "mysql"},
		{"not a URL", "memory", "memory"},
		{"password parameter", "postgres://admit@db/admit?password=s3cret&sslmode=require", "postgres://admit@db/admit?password=xxxxx&sslmode=require"},
		{"key passphrase, parameters kept as given", "postgres://admit@db/admit?sslkey=/k.pem&sslpassword=KeyS3cret", "postgres://admit@db/admit?sslkey=/k.pem&sslpassword=xxxxx"},
		{"escaped parameter name", "postgres://admit@db/admit?pass%77ord=s3cret", "postgres://admit@db/admit?password=xxxxx"},
		{"parameter name in capitals", "postgres://admit@db/admit?PASSWORD=s3cret&Password=s3cret", "postgres://admit@db/admit?PASSWORD=xxxxx&Password=xxxxx"},
		{"sentinel data password", "redis+sentinel://s1:26379?master_name=m&password=s3cret", "redis+sentinel://s1:26379?master_name=m&password=xxxxx"},
		{"socket host", "postgres://admit@/admit?host=/run/postgresql", "postgres://admit@/admit?host=/run/postgresql"},
		{"at sign after the host", "redis://cache/x@y", "redis" + refused},
		{"unparsable", "postgres://u:pw@db:54x/admit", "postgres" + refused},
		{"slash in password", "postgres://u:pa/ss@db/admit", "postgres" + refused},
		{"slash and port-like password", "postgres://admit:5432/S3cret@db.internal/admit", "postgres" + refused},
		{"redis path holding the password", "redis://:6379/S3cret@cache:6379/0", "redis" + refused},
		{"hash in password", "redis://:pa#ss@cache", "redis" + refused},
		{"hash in a password parameter", "postgres://admit@db/admit?password=#S3cret", "postgres" + refused},
		{"semicolon in a password parameter", "postgres://admit@db/admit?password=S3c;ret", "postgres" + refused},
		{"space before a parameter's name", "postgres://admit@db/admit?password =S3cret", "postgres" + refused},
		{"unparsable port before a password parameter", "postgres://admit@db:54x2/admit?password=S3cret", "postgres" + refused},
		{"at sign in a parameter before the password", "postgres://admit@db/admit?application_name=me@corp&password=S3cret", "postgres" + refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestConns(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	tests := []struct {
		name string
		s    Store
		want int
	}{
		{"memory", Store{Kind: Memory}, 0},
		{"postgres, set", Store{Postgres, "postgres://db/admit?pool_max_conns=20"}, 20},
		{"postgres, default", Store{Postgres, "postgres://db/admit"}, max(4, runtime.NumCPU())},
		{"redis, set", Store{Redis, "redis://cache:6379/0?pool_size=5&pipeline_pool_size=2"}, 7},
		{"redis, default", Store{Redis, "redis://cache:6379/0"}, 10*procs + 10},
		{"cluster, each node named", Store{Redis, "redis+cluster://a:6379?addr=b:6379&addr=c:6379&pool_size=4"}, 3 * (4 + 10)},
		{"sentinel and its sentinels", Store{Redis, "redis+sentinel://s1:26379?addr=s2:26379&master_name=m&pool_size=4"}, 4 + 10 + 2},
		{"unparsable", Store{Redis, "redis://cache:6379/x"}, 0},
		{"memcache, set", Store{Memcache, "memcache://a:11211,b:11211?max_idle_conns=3"}, 2 * 3},
		{"memcache, default", Store{Memcache, "memcache://a:11211"}, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Conns(); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// TestParse reads --store's forms, and refuses others without repeating
// the URL, which may hold a password.
func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Kind
		err  string
	}{
		{"memory", Memory, ""},
		{"postgres://db/admit", Postgres, ""},
		{"postgresql://db/admit", Postgres, ""},
		{"rediss+cluster://a:7000", Redis, ""},
		{"redis+sentinel://s:26379?master_name=m", Redis, ""},
		{"Memory", "", "want memory or"},
		{"mysql://db/admit", "", "want memory or"},
		{"redis://:s3cret@cache:port", "", "not a valid URL"},
		{"postgres://admit:5432/s3cret@db.internal/admit", "", "not a valid URL"},
		{"redis://:6379/s3cret@cache:6379/0", "", "not a valid URL"},
		{"postgres://admit:s3/cret@db/admit", "", "not a valid URL"},
		{"redis://:pa#s3cret@cache", "", "not a valid URL"},
		{"postgres://admit@db/admit?password=#s3cret", "", "not a valid URL"},
		{"postgres://admit@db/admit?password=s3c;ret", "", "not a valid URL"},
		{"postgres://admit@db/admit?password =s3cret", "", "not a valid URL"},
		{"postgres://admit:p@s3cret@db/admit", "", "not a valid URL"},
		{"postgres://admit@/admit?host=/run/postgresql", Postgres, ""},
		{"memcache://a:11211,[::1]:11212?max_idle_conns=4", Memcache, ""},
		{"memcache://user:s3cret@a:11211", "", "no user, password"},
		{"memcache://a:11211/0", "", "no user, password, path"},
		{"memcache://a:11211, b:11211", "", "no user, password, path, space"},
		{"memcache://a:11211\r\nflush_all", "", "control character"},
		{"memcache://a", "", "want host:port"},
		{"memcache://a:11211,", "", "want host:port"},
		{"memcache://a:0", "", "want host:port"},
		{"memcache://a:11211?max_idle_conns=0", "", "at least 1"},
		{"memcache://a:11211?max_idle_conns=2&max_idle_conns=3", "", "want one whole number"},
		{"memcache://a:11211?timeout=1s", "", `unknown parameter "timeout"`},
	} {
		got, err := Parse(tt.in)
		if tt.err == "" && (err != nil || got.Kind != tt.want) || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Parse(%q): got %+v, %v; want %s %q", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q): the error %q holds the password", tt.in, err)
		}
	}
}

// TestErrorsHoldNoPassword gives each driver a URL it refuses, with a
// password: no error repeats it.
func TestErrorsHoldNoPassword(t *testing.T) {
	for _, s := range []Store{
		{Postgres, "postgres://admit:s3cret@db/admit?pool_max_conns=x"},
		{Postgres, "postgres://admit@db/admit?sslpassword=s3cret&pool_max_conns=x"},
		{Redis, "redis://:s3cret@cache:6379/s3cret"},
		{Redis, "redis://:s3cret@cache:6379/x"},
		{Redis, "redis+cluster://:s3cret@a:7000?adr=b"},
	} {
		errs := []error{s.Check()}
		if s.Kind == Redis {
			_, err := RedisClient(s.URL)
			errs = append(errs, err)
		} else {
			_, err := Pool(context.Background(), s.URL)
			_, oerr := OfflinePool(s.URL)
			errs = append(errs, err, oerr)
		}
		for _, err := range errs {
			if err == nil || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: got %v, want an error without the password", Redact(s.URL), err)
			}
		}
	}
}

// TestOfflineNeverConnects answers through an offline pool and client
// without reaching any server.
func TestOfflineNeverConnects(t *testing.T) {
	pool, err := OfflinePool("postgres://admit@127.0.0.1:5432/test")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), errOffline.Error()) {
		t.Errorf("offline pool: got %v, want %v", err, errOffline)
	}
	if err := (Offline{}).Eval(context.Background(), "return 1", nil).Err(); !errors.Is(err, errOffline) {
		t.Errorf("offline client: got %v, want %v", err, errOffline)
	}
}

// TestBatchScriptParameter reads admit's own batch_script parameter out of
// a Redis URL, before go-redis, which would refuse it, parses the rest.
func TestBatchScriptParameter(t *testing.T) {
	for _, tt := range []struct {
		url  string
		one  bool
		conn int // connections the rest of the URL makes; 0: not checked
		err  string
	}{
		{url: "redis://cache:6379", one: false},
		{url: "redis://cache:6379?batch_script=on", one: true},
		{url: "redis://cache:6379?batch_script=off&pool_size=3", one: false, conn: 13}, // 3, and the pipelines' 10
		{url: "redis://cache:6379?pool_size=3&batch_script=on", one: true, conn: 13},
		{url: "redis+sentinel://s1:26379?master_name=admit&batch_script=on", one: true},
		{url: "redis+cluster://a:7000?batch_script=on", err: "a cluster's buckets live on several"},
		{url: "redis+cluster://a:7000?batch_script=off", err: "a cluster's buckets live on several"},
		{url: "redis://cache:6379?Batch_Script=on", one: true},
		{url: "redis://cache:6379?batch%5Fscript=on", one: true},
		{url: "redis://cache:6379?batch_script=", err: "want on or off"},
		{url: "postgres://admit@db:5432/admit?batch_script=on", err: "a Redis URL's parameter"},
		{url: "postgres://admit@db:5432/admit?sslmode=disable&Batch_Script=yes", err: "a Redis URL's parameter"},
		{url: "redis://cache:6379?batch_script=yes", err: "batch_script=yes, want on or off"},
		{url: "redis://cache:6379?batch_script=on&batch_script=on", err: "given twice"},
	} {
		s, err := Parse(tt.url)
		if err == nil {
			err = s.Check()
		}
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: got %v, want %q", tt.url, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		if got := s.OneServer(); got != tt.one {
			t.Errorf("%s: OneServer %v, want %v", tt.url, got, tt.one)
		}
		if tt.conn != 0 && s.Conns() != tt.conn {
			t.Errorf("%s: %d connections, want %d", tt.url, s.Conns(), tt.conn)
		}
	}
}

// TestMemcache reads a memcache:// URL's servers and idle connections,
// shows it whole (it holds no secret), and marks it as counting only, the
// one kind the proxy refuses.
func TestMemcache(t *testing.T) {
	const u = "memcache://a:11211,b:11212?max_idle_conns=5"
	m, err := ParseMemcache(u)
	if err != nil || strings.Join(m.Servers, " ") != "a:11211 b:11212" || m.MaxIdleConns != 5 {
		t.Fatalf("got %+v, %v", m, err)
	}
	if got := Redact(u); got != u {
		t.Errorf("Redact: got %q, want it whole", got)
	}
	for _, k := range []Kind{Memory, Postgres, Redis, Memcache} {
		if got := k.CountsOnly(); got != (k == Memcache) {
			t.Errorf("%s: CountsOnly %v", k, got)
		}
	}
}
