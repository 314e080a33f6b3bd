package upstream

import "sync"

// bufferSize is the size of the buffers a proxy copies bodies through,
// httputil.ReverseProxy's own default.
const bufferSize = 32 << 10

// BufferPool returns a pool of copy buffers for httputil.ReverseProxy. Without
// one, the proxy allocates and clears 32 KiB for every request, which costs
// more than the rest of its work on small answers. It is safe for concurrent
// use.
func BufferPool() *Buffers { return &Buffers{} }

// Buffers is an httputil.BufferPool of 32 KiB buffers. The zero value is
// ready to use.
type Buffers struct {
	pool sync.Pool // of *[bufferSize]byte: a pointer goes into the pool without an allocation
}

// Get returns a buffer of 32 KiB.
func (b *Buffers) Get() []byte {
	if p, ok := b.pool.Get().(*[bufferSize]byte); ok {
		return p[:]
	}
	return new([bufferSize]byte)[:]
}

// Put gives a buffer from Get back.
func (b *Buffers) Put(buf []byte) {
	if cap(buf) != bufferSize {
		return
	}
	b.pool.Put((*[bufferSize]byte)(buf[:bufferSize]))
}
