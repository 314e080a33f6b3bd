package testserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Sentinel is a private Redis master with one replica, watched by three
// Redis Sentinels, for tests of a client's behaviour when the master crashes
// and the sentinels promote the replica. Only [RedisSentinel] makes a usable
// one. Its methods must be called from the test's goroutine; it is not safe
// for concurrent use.
type Sentinel struct {
	// MasterName is the name the sentinels know the master by: "admit".
	MasterName string
	// SentinelAddrs are the addresses of the three sentinels,
	// "127.0.0.1:port". The sentinels are never killed.
	SentinelAddrs []string

	data map[string]*Server // the master and the replica, by address
}

// RedisSentinel starts a master, a replica of it and three sentinels
// monitoring it with a quorum of two, and returns once every sentinel knows
// the master, the replica and the other two sentinels, and agrees that a
// failover could be authorised (SENTINEL CKQUORUM). Persistence is off.
//
// The sentinels declare the master down after 500 ms without an answer and
// give a failover 2 s before trying another, so a failover takes a few
// seconds rather than the default's minutes. Each sentinel rewrites its own
// sentinel.conf, as sentinels do. Every process stops for good, and the
// directories are removed, when t ends.
func RedisSentinel(t testing.TB) *Sentinel {
	t.Helper()
	const name = "admit"
	root := tempDir(t, "redis-sentinel")
	ports := freePorts(t, 5)
	s := &Sentinel{MasterName: name, data: make(map[string]*Server)}
	dir := func(port int) string {
		d := filepath.Join(root, strconv.Itoa(port))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("testserver: %v", err)
		}
		return d
	}

	// The replica must be synchronised before the sentinels start: they find
	// replicas in the master's INFO, which they read at once and then only
	// every ten seconds.
	mp, rp := ports[0], ports[1]
	masterDir, replicaDir := dir(mp), dir(rp)
	master := redisNode(t, "redis master", masterDir, mp, redisArgs(mp, masterDir)...)
	replica := redisNode(t, "redis replica", replicaDir, rp,
		append(redisArgs(rp, replicaDir), "--replicaof", "127.0.0.1", strconv.Itoa(mp))...)
	s.data[master.Addr], s.data[replica.Addr] = master, replica
	settle(t, "redis replica "+replica.Addr+" to synchronise with "+master.Addr, func(ctx context.Context) error {
		if kind, linked, err := role(ctx, replica.Addr); err != nil || kind != "slave" || !linked {
			return fmt.Errorf("ROLE on %s: got %q, linked %v (%v); want a synchronised replica", replica.Addr, kind, linked, err)
		}
		return nil
	})

	for _, port := range ports[2:] {
		d := dir(port)
		conf := filepath.Join(d, "sentinel.conf")
		text := fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
sentinel resolve-hostnames no
sentinel monitor %s 127.0.0.1 %d 2
sentinel down-after-milliseconds %[3]s 500
sentinel failover-timeout %[3]s 2000
sentinel parallel-syncs %[3]s 1
`, port, d, name, mp)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("testserver: %v", err)
		}
		sn := redisNode(t, "redis sentinel", d, port, conf, "--sentinel")
		s.SentinelAddrs = append(s.SentinelAddrs, sn.Addr)
	}
	settle(t, "redis sentinels "+strings.Join(s.SentinelAddrs, " ")+" to watch "+master.Addr, func(ctx context.Context) error {
		for _, addr := range s.SentinelAddrs {
			if err := s.watching(ctx, addr, master.Addr, replica.Addr); err != nil {
				return err
			}
		}
		return nil
	})
	return s
}

// URL returns a URL naming every sentinel and the master,
// "redis+sentinel://127.0.0.1:S1?master_name=admit&addr=127.0.0.1:S2&addr=127.0.0.1:S3".
// With the scheme redis:// it is what go-redis's ParseFailoverURL takes.
func (s *Sentinel) URL() string {
	q := []string{"master_name=" + s.MasterName}
	for _, a := range s.SentinelAddrs[1:] {
		q = append(q, "addr="+a)
	}
	return "redis+sentinel://" + s.SentinelAddrs[0] + "?" + strings.Join(q, "&")
}

// MasterAddr returns the master's address as the first sentinel reports it.
func (s *Sentinel) MasterAddr(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	addr, err := s.masterAddr(ctx, s.SentinelAddrs[0])
	if err != nil {
		t.Fatalf("testserver: redis sentinel: %v", err)
	}
	return addr
}

// KillMaster kills with SIGKILL, as a crash would, the master the sentinels
// report, and returns its address. It returns once the process has exited;
// the sentinels promote the replica a few seconds later
// ([Sentinel.WaitFailover]).
func (s *Sentinel) KillMaster(t testing.TB) (addr string) {
	t.Helper()
	addr = s.MasterAddr(t)
	srv, ok := s.data[addr]
	if !ok {
		t.Fatalf("testserver: redis sentinel: master %s is not one of the servers started", addr)
	}
	srv.kill()
	return addr
}

// WaitFailover returns once every sentinel reports the same master, a
// running server that ROLE says is a master: after [Sentinel.KillMaster],
// the promoted replica. It fails t if that takes longer than 30 seconds.
func (s *Sentinel) WaitFailover(t testing.TB) {
	t.Helper()
	settle(t, "redis sentinels to promote a replica", func(ctx context.Context) error {
		var master string
		for _, sn := range s.SentinelAddrs {
			addr, err := s.masterAddr(ctx, sn)
			if err != nil {
				return err
			}
			if master != "" && addr != master {
				return fmt.Errorf("sentinel %s reports master %s, another %s", sn, addr, master)
			}
			master = addr
		}
		if srv, ok := s.data[master]; !ok || !srv.running() {
			return fmt.Errorf("sentinels report master %s, which does not run", master)
		}
		if kind, _, err := role(ctx, master); err != nil || kind != "master" {
			return fmt.Errorf("sentinels report master %s, but ROLE says %q (%v)", master, kind, err)
		}
		return nil
	})
}

// masterAddr asks the sentinel at addr for the master's address.
func (s *Sentinel) masterAddr(ctx context.Context, addr string) (string, error) {
	reply, err := call(ctx, addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.MasterName)
	if err != nil {
		return "", err
	}
	a, _ := reply.([]any)
	if len(a) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME %s on %s: got %v, want host and port", s.MasterName, addr, reply)
	}
	host, _ := a[0].(string)
	port, _ := a[1].(string)
	return net.JoinHostPort(host, port), nil
}

// watching returns nil once the sentinel at addr reports master as the
// master, replica as its replica with the link up, and can reach enough
// other sentinels to authorise a failover.
func (s *Sentinel) watching(ctx context.Context, addr, master, replica string) error {
	got, err := s.masterAddr(ctx, addr)
	if err != nil {
		return err
	}
	if got != master {
		return fmt.Errorf("sentinel %s: got master %s, want %s", addr, got, master)
	}
	reply, err := call(ctx, addr, "SENTINEL", "REPLICAS", s.MasterName)
	if err != nil {
		return err
	}
	a, _ := reply.([]any)
	found := false
	for _, r := range a {
		m := pairs(r)
		if m["ip"]+":"+m["port"] == replica {
			found = m["flags"] == "slave" && m["master-link-status"] == "ok"
		}
	}
	if !found {
		return fmt.Errorf("sentinel %s: SENTINEL REPLICAS %s: got %v, want %s online", addr, s.MasterName, reply, replica)
	}
	if _, err := callString(ctx, addr, "SENTINEL", "CKQUORUM", s.MasterName); err != nil {
		return err
	}
	reply, err = call(ctx, addr, "SENTINEL", "SENTINELS", s.MasterName)
	if err != nil {
		return err
	}
	if a, _ := reply.([]any); len(a) != len(s.SentinelAddrs)-1 {
		return fmt.Errorf("sentinel %s: SENTINEL SENTINELS %s: got %d others, want %d", addr, s.MasterName, len(a), len(s.SentinelAddrs)-1)
	}
	return nil
}
