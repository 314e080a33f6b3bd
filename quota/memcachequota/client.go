package memcachequota

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// maxKey is the longest key memcached takes.
const maxKey = 250

// errProtocol reports an answer outside memcached's text protocol, after
// which the connection is closed rather than reused.
var errProtocol = errors.New("memcachequota: answer outside memcached's protocol")

// client speaks memcached's text protocol, only the three commands a
// counter needs: incr, add and get. Each call runs on one connection under
// its context's deadline, and a connection goes back to the idle pool only
// when no byte past its answer had arrived as it was read (see the
// package's doc for later ones); any error closes it. Keys
// are spread over servers by the CRC-32 of the key, as
// github.com/bradfitz/gomemcache spreads them. It is safe for concurrent
// use.
type client struct {
	servers []string
	maxIdle int
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	// slots holds, by server, a place for each call in flight to it, at
	// most MaxConns: with the idle ones, the connections it may have open.
	slots map[string]chan struct{}

	mu     sync.Mutex         // guards the following fields
	idle   map[string][]*conn // by server
	closed bool
}

// conn is one connection to a server.
type conn struct {
	nc     net.Conn
	r      *bufio.Reader
	server string
}

// checkKey refuses a key memcached's text protocol cannot carry as one
// token: empty, longer than 250 bytes, or holding a byte outside printable
// ASCII (a space or a control character would end the key, and a CR LF the
// command, so that what follows would be read as a command of its own).
func checkKey(key string) error {
	if len(key) == 0 || len(key) > maxKey {
		return fmt.Errorf("memcachequota: key of %d bytes, want 1 to %d", len(key), maxKey)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("memcachequota: key holds byte %#02x at %d: want printable ASCII without spaces", c, i)
		}
	}
	return nil
}

// pick returns the server that holds key.
func (c *client) pick(key string) string {
	if len(c.servers) == 1 {
		return c.servers[0]
	}
	return c.servers[crc32.ChecksumIEEE([]byte(key))%uint32(len(c.servers))]
}

// get returns an idle connection to server, or dials one.
func (c *client) get(ctx context.Context, server string) (*conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if l := c.idle[server]; len(l) > 0 {
		cn := l[len(l)-1]
		c.idle[server] = l[:len(l)-1]
		c.mu.Unlock()
		return cn, nil
	}
	c.mu.Unlock()
	nc, err := c.dial(ctx, "tcp", server)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 512), server: server}, nil
}

// put keeps cn for a later call, or closes it when the pool is full.
func (c *client) put(cn *conn) {
	c.mu.Lock()
	if !c.closed && len(c.idle[cn.server]) < c.maxIdle {
		c.idle[cn.server] = append(c.idle[cn.server], cn)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	cn.nc.Close()
}

// close closes the idle connections; connections in use are closed when
// their calls end.
func (c *client) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, l := range c.idle {
		for _, cn := range l {
			cn.nc.Close()
		}
	}
	c.idle = nil
}

// do sends cmd, which names key, to key's server and reads its answer with
// read, all before ctx's deadline.
func (c *client) do(ctx context.Context, key string, cmd []byte, read func(*bufio.Reader) error) error {
	if err := checkKey(key); err != nil {
		return err
	}
	server := c.pick(key)
	slot := c.slots[server]
	select {
	case slot <- struct{}{}:
		defer func() { <-slot }()
	case <-ctx.Done():
		return ctx.Err()
	}
	cn, err := c.get(ctx, server)
	if err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok {
		cn.nc.SetDeadline(d)
	}
	// Cancellation ends the call too, whatever the deadline.
	stop := context.AfterFunc(ctx, func() { cn.nc.SetDeadline(aLongTimeAgo) })
	_, err = cn.nc.Write(cmd)
	if err == nil {
		err = read(cn.r)
	}
	if !stop() || err != nil || cn.r.Buffered() > 0 {
		cn.nc.Close()
		if err == nil {
			err = errProtocol // bytes beyond the answer
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return err
	}
	c.put(cn)
	return nil
}

// aLongTimeAgo is a deadline in the past, which ends a connection's
// reads and writes at once.
var aLongTimeAgo = time.Unix(1, 0)

// incr adds n to key's number and returns it; found is false when the key
// is not there.
func (c *client) incr(ctx context.Context, key string, n uint64) (v uint64, found bool, err error) {
	cmd := fmt.Appendf(nil, "incr %s %d\r\n", key, n)
	err = c.do(ctx, key, cmd, func(r *bufio.Reader) error {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		if string(line) == "NOT_FOUND" {
			return nil
		}
		if v, err = parseNumber(line); err != nil {
			return answerError(line)
		}
		found = true
		return nil
	})
	return v, found, err
}

// add stores n as key's number, expiring at exp (memcached's exptime),
// unless the key is there; stored reports which.
func (c *client) add(ctx context.Context, key string, n uint64, exp int64) (stored bool, err error) {
	value := strconv.FormatUint(n, 10)
	cmd := fmt.Appendf(nil, "add %s 0 %d %d\r\n%s\r\n", key, exp, len(value), value)
	err = c.do(ctx, key, cmd, func(r *bufio.Reader) error {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		switch string(line) {
		case "STORED":
			stored = true
		case "NOT_STORED":
		default:
			return answerError(line)
		}
		return nil
	})
	return stored, err
}

// read returns key's number; found is false when the key is not there.
func (c *client) read(ctx context.Context, key string) (v uint64, found bool, err error) {
	cmd := fmt.Appendf(nil, "get %s\r\n", key)
	err = c.do(ctx, key, cmd, func(r *bufio.Reader) error {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		if string(line) == "END" {
			return nil
		}
		// VALUE <key> <flags> <bytes>
		f := bytes.Split(line, []byte(" "))
		if len(f) != 4 || string(f[0]) != "VALUE" || string(f[1]) != key {
			return answerError(line)
		}
		size, err := strconv.Atoi(string(f[3]))
		if err != nil || size < 1 || size > 40 { // a number, maybe padded with spaces by a decr
			return answerError(line)
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(r, data); err != nil {
			return err
		}
		if !bytes.HasSuffix(data, []byte("\r\n")) {
			return errProtocol
		}
		if v, err = parseNumber(data[:size]); err != nil {
			return fmt.Errorf("memcachequota: key %s holds %q, not a count", key, data[:size])
		}
		end, err := readLine(r)
		if err != nil {
			return err
		}
		if string(end) != "END" {
			return errProtocol
		}
		found = true
		return nil
	})
	return v, found, err
}

// readLine reads one answer line without its CR LF; a line without them,
// or longer than the reader's buffer, is outside the protocol.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errProtocol
		}
		return nil, err
	}
	if !bytes.HasSuffix(line, []byte("\r\n")) {
		return nil, errProtocol
	}
	return line[:len(line)-2], nil
}

// parseNumber reads a count as memcached writes one: decimal digits, maybe
// followed by spaces.
func parseNumber(b []byte) (uint64, error) {
	return strconv.ParseUint(string(bytes.TrimRight(b, " ")), 10, 64)
}

// answerError is memcached's refusal of a command (ERROR, CLIENT_ERROR,
// SERVER_ERROR), or errProtocol for a line that is none of its answers.
func answerError(line []byte) error {
	if string(line) == "ERROR" || bytes.HasPrefix(line, []byte("CLIENT_ERROR ")) || bytes.HasPrefix(line, []byte("SERVER_ERROR ")) {
		return fmt.Errorf("memcachequota: memcached answered %q", line)
	}
	return errProtocol
}
