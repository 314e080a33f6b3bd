package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// clusterSlots is the number of hash slots a Redis Cluster divides keys into.
const clusterSlots = 16384

// Cluster is a private Redis Cluster of three masters, each with one replica,
// for tests of a client's behaviour when a master crashes and its replica
// takes over. Only [RedisCluster] makes a usable one. Its methods must be
// called from the test's goroutine; it is not safe for concurrent use.
type Cluster struct {
	// Addrs are the addresses of the six nodes, "127.0.0.1:port", masters
	// and replicas alike; which is which changes with each failover.
	Addrs []string

	nodes map[string]*Server // by address
}

// RedisCluster starts six redis-server processes in cluster mode, joins them
// into a cluster of three masters with one replica each, and returns once
// every node says the cluster is ok, every slot is served and every replica
// has synchronised with its master. Persistence is off.
//
// The nodes declare a peer failing after a second without an answer
// (cluster-node-timeout 1000) and a replica takes over however stale its
// data (cluster-replica-validity-factor 0), so that a failover takes a few
// seconds rather than the default's half minute. Each node's nodes.conf sits
// in a directory of its own, so a killed node restarts knowing the cluster.
// Every process stops for good, and the directories are removed, when t
// ends. Creating the cluster needs redis-cli as well as redis-server.
func RedisCluster(t testing.TB) *Cluster {
	t.Helper()
	cli := redisBin(t, "redis-cli")
	root := tempDir(t, "redis-cluster")
	ports := freePorts(t, 12) // a client port and a cluster bus port per node
	c := &Cluster{nodes: make(map[string]*Server)}
	for i := range 6 {
		port, bus := ports[2*i], ports[2*i+1]
		dir := filepath.Join(root, strconv.Itoa(port))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("testserver: %v", err)
		}
		args := append(redisArgs(port, dir),
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-port", strconv.Itoa(bus),
			"--cluster-node-timeout", "1000",
			"--cluster-replica-validity-factor", "0",
			"--cluster-allow-replica-migration", "no")
		s := redisNode(t, "redis cluster node", dir, port, args...)
		c.Addrs = append(c.Addrs, s.Addr)
		c.nodes[s.Addr] = s
	}

	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	create := exec.CommandContext(ctx, cli, append(append([]string{"--cluster", "create"}, c.Addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...)
	create.SysProcAttr = sysProcAttr(nil)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("testserver: redis-cli --cluster create %s: %v\n%s", strings.Join(c.Addrs, " "), err, out)
	}
	settle(t, "redis cluster "+strings.Join(c.Addrs, " ")+" to form", c.settled)
	return c
}

// URL returns a URL naming every node, "redis+cluster://127.0.0.1:P1?addr=127.0.0.1:P2&addr=...".
// With the scheme redis:// it is what go-redis's ParseClusterURL takes.
func (c *Cluster) URL() string {
	q := make([]string, len(c.Addrs)-1)
	for i, a := range c.Addrs[1:] {
		q[i] = "addr=" + a
	}
	return "redis+cluster://" + c.Addrs[0] + "?" + strings.Join(q, "&")
}

// Masters returns the addresses of the masters serving slots, sorted, as
// the first running node sees them; a master it has declared failing is left
// out.
func (c *Cluster) Masters(t testing.TB) []string {
	t.Helper()
	nodes := c.view(t)
	var masters []string
	for _, n := range nodes {
		if n.serving() {
			masters = append(masters, n.addr)
		}
	}
	slices.Sort(masters)
	return masters
}

// KillMasterOf kills with SIGKILL, as a crash would, the master serving
// key's hash slot, and returns its address. It returns once the process has
// exited; its replica takes over a few seconds later ([Cluster.WaitFailover]).
func (c *Cluster) KillMasterOf(t testing.TB, key string) (addr string) {
	t.Helper()
	slot := c.slot(t, key)
	for _, n := range c.view(t) {
		if n.serving() && n.serves(slot) {
			if s, ok := c.nodes[n.addr]; ok {
				s.kill()
				return n.addr
			}
		}
	}
	t.Fatalf("testserver: redis cluster: no master serves slot %d of key %q", slot, key)
	return ""
}

// WaitFailover returns once a running master serves key's hash slot and the
// cluster has settled: every running node says the cluster is ok, every
// slot is served, and the nodes agree on which master serves which slots.
// It fails t if that takes longer than 30 seconds.
func (c *Cluster) WaitFailover(t testing.TB, key string) {
	t.Helper()
	slot := c.slot(t, key)
	settle(t, fmt.Sprintf("redis cluster to fail over slot %d of key %q", slot, key), func(ctx context.Context) error {
		if err := c.settled(ctx); err != nil {
			return err
		}
		nodes, err := clusterNodes(ctx, c.running()[0])
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.serving() && n.serves(slot) {
				if kind, _, err := role(ctx, n.addr); err != nil || kind != "master" {
					return fmt.Errorf("%s serves slot %d but ROLE says %q (%v)", n.addr, slot, kind, err)
				}
				return nil
			}
		}
		return fmt.Errorf("no master serves slot %d", slot)
	})
}

// Restart runs the node at addr again, after [Cluster.KillMasterOf], on the
// same port and directory. It returns once the cluster has settled, with the
// node back as a replica synchronised with the master that took its slots.
func (c *Cluster) Restart(t testing.TB, addr string) {
	t.Helper()
	s, ok := c.nodes[addr]
	if !ok {
		t.Fatalf("testserver: redis cluster: restart %q: not a node of the cluster %s", addr, strings.Join(c.Addrs, " "))
	}
	s.Start()
	settle(t, "redis cluster to take "+addr+" back", c.settled)
}

// running returns the addresses of the nodes whose processes run, in the
// order of Addrs.
func (c *Cluster) running() []string {
	var addrs []string
	for _, a := range c.Addrs {
		if c.nodes[a].running() {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// view returns CLUSTER NODES as the first running node sees it.
func (c *Cluster) view(t testing.TB) []clusterNode {
	t.Helper()
	running := c.running()
	if len(running) == 0 {
		t.Fatalf("testserver: redis cluster: no node of %s runs", strings.Join(c.Addrs, " "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	nodes, err := clusterNodes(ctx, running[0])
	if err != nil {
		t.Fatalf("testserver: redis cluster: %v", err)
	}
	return nodes
}

// slot returns key's hash slot, as a running node computes it.
func (c *Cluster) slot(t testing.TB, key string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	running := c.running()
	if len(running) == 0 {
		t.Fatalf("testserver: redis cluster: no node of %s runs", strings.Join(c.Addrs, " "))
	}
	reply, err := call(ctx, running[0], "CLUSTER", "KEYSLOT", key)
	slot, ok := reply.(int64)
	if err != nil || !ok {
		t.Fatalf("testserver: redis cluster: CLUSTER KEYSLOT %q: got %v (%v), want a slot", key, reply, err)
	}
	return int(slot)
}

// settled returns nil once every running node says the cluster is ok with
// every slot served, knows all six nodes, and sees the same running masters
// serving the same slots and no running node failing; and once every
// running replica has synchronised with its master.
func (c *Cluster) settled(ctx context.Context) error {
	var want string // the first node's slot map
	for _, addr := range c.running() {
		info, err := callString(ctx, addr, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		for field, v := range map[string]string{
			"cluster_state":       "ok",
			"cluster_slots_ok":    strconv.Itoa(clusterSlots),
			"cluster_known_nodes": strconv.Itoa(len(c.Addrs)),
		} {
			if got := infoField(info, field); got != v {
				return fmt.Errorf("CLUSTER INFO on %s: got %s:%s, want %s", addr, field, got, v)
			}
		}
		nodes, err := clusterNodes(ctx, addr)
		if err != nil {
			return err
		}
		var slots []string
		for _, n := range nodes {
			s, ok := c.nodes[n.addr]
			switch {
			case !ok:
				return fmt.Errorf("CLUSTER NODES on %s: unknown node %s", addr, n.addr)
			case s.running() && n.failing():
				return fmt.Errorf("CLUSTER NODES on %s: running node %s flagged %s", addr, n.addr, n.flags)
			case n.serving():
				if !s.running() {
					return fmt.Errorf("CLUSTER NODES on %s: killed node %s still serves slots", addr, n.addr)
				}
				slots = append(slots, n.addr+" "+n.slots)
			}
		}
		slices.Sort(slots)
		got := strings.Join(slots, ", ")
		if want == "" {
			want = got
		} else if got != want {
			return fmt.Errorf("CLUSTER NODES on %s: slots served as %s; another node sees %s", addr, got, want)
		}
		kind, linked, err := role(ctx, addr)
		if err != nil {
			return err
		}
		if kind == "slave" && !linked {
			return fmt.Errorf("replica %s has not synchronised with its master", addr)
		}
	}
	return nil
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	addr  string // "127.0.0.1:port", without the bus port
	flags string // "master", "myself,slave", "master,fail", ...
	slots string // the slot ranges it serves, "0-5460 10923", empty for a replica
}

// serving reports whether the node is a master serving slots, not known to
// be failing.
func (n clusterNode) serving() bool {
	return slices.Contains(strings.Split(n.flags, ","), "master") && n.slots != "" && !n.failing()
}

// failing reports whether some node has declared this one failing, or this
// node's view is not yet complete.
func (n clusterNode) failing() bool {
	for f := range strings.SplitSeq(n.flags, ",") {
		switch f {
		case "fail", "fail?", "handshake", "noaddr":
			return true
		}
	}
	return false
}

// serves reports whether slot lies in one of the node's ranges.
func (n clusterNode) serves(slot int) bool {
	for r := range strings.FieldsSeq(n.slots) {
		lo, hi, _ := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err2 != nil {
			b = a
		}
		if err1 == nil && a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// clusterNodes asks the node at addr for its view of the cluster.
func clusterNodes(ctx context.Context, addr string) ([]clusterNode, error) {
	text, err := callString(ctx, addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var nodes []clusterNode
	for line := range strings.Lines(text) {
		// <id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot>...
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES on %s: malformed line %q", addr, line)
		}
		hostPort, _, _ := strings.Cut(f[1], "@")
		var slots []string
		for _, s := range f[8:] {
			if !strings.HasPrefix(s, "[") { // "[slot->-id]": a slot on the move
				slots = append(slots, s)
			}
		}
		nodes = append(nodes, clusterNode{addr: hostPort, flags: f[2], slots: strings.Join(slots, " ")})
	}
	return nodes, nil
}
