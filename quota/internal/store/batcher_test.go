package store

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestBatcherGathersWhileABatchIsOut holds a lone call's batch in decide
// while more calls queue: the lone call leaves alone, the others leave in
// batches of at most max, and every call is decided once.
func TestBatcherGathersWhileABatchIsOut(t *testing.T) {
	const max, more = 4, 10
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sizes []int
	decided := map[int]int{}
	b := NewBatcher(max, func(calls []int) {
		mu.Lock()
		sizes = append(sizes, len(calls))
		for _, c := range calls {
			decided[c]++
		}
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			close(started)
			<-release
		}
		for range calls {
			wg.Done()
		}
	})
	defer b.Close()
	wg.Add(1 + more)
	if err := b.Enqueue(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	<-started
	var queued sync.WaitGroup
	for i := 1; i <= more; i++ {
		queued.Go(func() {
			if err := b.Enqueue(context.Background(), i); err != nil {
				t.Error(err)
			}
		})
	}
	close(release)
	queued.Wait()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if sizes[0] != 1 {
		t.Errorf("first batch: %d calls, want the lone call alone", sizes[0])
	}
	for i, n := range sizes {
		if n > max {
			t.Errorf("batch %d: %d calls, want at most %d", i, n, max)
		}
	}
	if len(decided) != 1+more {
		t.Errorf("%d calls decided, want %d", len(decided), 1+more)
	}
	for c, n := range decided {
		if n != 1 {
			t.Errorf("call %d decided %d times, want once", c, n)
		}
	}
}

func TestBatcherClosed(t *testing.T) {
	b := NewBatcher(2, func([]int) {})
	b.Close()
	if err := b.Enqueue(context.Background(), 1); !errors.Is(err, ErrBatcherClosed) {
		t.Errorf("Enqueue after Close: got %v, want ErrBatcherClosed", err)
	}
	b.Close() // twice is harmless
}

// TestBatcherEnqueueHonoursTheContext fills the queue while a batch is out:
// a further call gives up when its context ends.
func TestBatcherEnqueueHonoursTheContext(t *testing.T) {
	started, hold := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b := NewBatcher(1, func([]int) {
		once.Do(func() { close(started) })
		<-hold
	})
	defer b.Close()
	defer close(hold)
	if err := b.Enqueue(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	<-started // 1 is out in decide
	if err := b.Enqueue(context.Background(), 2); err != nil {
		t.Fatal(err) // 2 fills the queue
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Enqueue(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Errorf("Enqueue on a full queue after its context ended: got %v, want context.Canceled", err)
	}
}
