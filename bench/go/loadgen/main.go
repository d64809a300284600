// Command loadgen is etcdsim's load generator for the served path: N clients sharing M gRPC connections
// (etcd's Go client, clientv3), each sending one request at a time — puts of fixed-size values, or
// serializable / linearizable ranges of one key — for a fixed number of requests. It prints one JSON line:
// requests, errors, wall seconds, throughput and latency percentiles. The bench (bench/served.bench.ts)
// runs it against a real etcd and against `etcdsim serve` and reads each server's CPU time around it.
//
// Build offline in GOPATH mode against Debian's golang-etcd-server-dev (see bench/served.bench.ts).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3"
)

type result struct {
	Op        string  `json:"op"`
	Clients   int     `json:"clients"`
	Conns     int     `json:"conns"`
	Requests  int     `json:"requests"`
	Errors    int64   `json:"errors"`
	FirstErr  string  `json:"firstError,omitempty"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"opsPerSec"`
	P50Ms     float64 `json:"p50Ms"`
	P90Ms     float64 `json:"p90Ms"`
	P99Ms     float64 `json:"p99Ms"`
	MaxMs     float64 `json:"maxMs"`
}

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:2379", "comma-separated endpoints")
	conns := flag.Int("conns", 8, "gRPC connections (one clientv3.Client each)")
	clients := flag.Int("clients", 64, "concurrent clients, spread over the connections")
	op := flag.String("op", "put", "put | range-serializable | range-linearizable")
	total := flag.Int("total", 20000, "requests in all")
	valueSize := flag.Int("value-size", 256, "bytes per put value")
	keySpace := flag.Int("key-space", 10000, "puts go to keys bench/k<0..key-space-1>")
	prefill := flag.Bool("prefill", false, "put the range key before the run")
	warmup := flag.Int("warmup", 0, "untimed requests before the run")
	flag.Parse()

	eps := strings.Split(*endpoints, ",")
	cs := make([]*clientv3.Client, *conns)
	for i := range cs {
		c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: connect:", err)
			os.Exit(1)
		}
		defer c.Close()
		cs[i] = c
	}
	value := strings.Repeat("v", *valueSize)
	const rangeKey = "bench/range-key"
	if *prefill {
		if _, err := cs[0].Put(context.Background(), rangeKey, value); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: prefill:", err)
			os.Exit(1)
		}
	}

	var request func(c *clientv3.Client, r *rand.Rand) error
	switch *op {
	case "put":
		request = func(c *clientv3.Client, r *rand.Rand) error {
			_, err := c.Put(context.Background(), fmt.Sprintf("bench/k%d", r.Intn(*keySpace)), value)
			return err
		}
	case "range-serializable":
		request = func(c *clientv3.Client, _ *rand.Rand) error {
			_, err := c.Get(context.Background(), rangeKey, clientv3.WithSerializable())
			return err
		}
	case "range-linearizable":
		request = func(c *clientv3.Client, _ *rand.Rand) error {
			_, err := c.Get(context.Background(), rangeKey)
			return err
		}
	default:
		fmt.Fprintln(os.Stderr, "loadgen: unknown -op", *op)
		os.Exit(2)
	}

	run := func(n int, lat []time.Duration) (time.Duration, int64, string) {
		var next int64 = -1
		var errs int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < *clients; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				c := cs[w%len(cs)]
				r := rand.New(rand.NewSource(int64(w) + 1))
				for {
					i := atomic.AddInt64(&next, 1)
					if i >= int64(n) {
						return
					}
					t0 := time.Now()
					if err := request(c, r); err != nil {
						atomic.AddInt64(&errs, 1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					if lat != nil {
						lat[i] = time.Since(t0)
					}
				}
			}(w)
		}
		wg.Wait()
		fe, _ := firstErr.Load().(string)
		return time.Since(start), errs, fe
	}

	if *warmup > 0 {
		run(*warmup, nil)
	}
	// Marks the start of the timed run for a reader of stderr (the bench reads server CPU around it).
	fmt.Fprintln(os.Stderr, "loadgen: timed run starts")
	lat := make([]time.Duration, *total)
	elapsed, errs, firstErr := run(*total, lat)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		i := int(p * float64(len(lat)-1))
		return float64(lat[i]) / 1e6
	}
	out := result{
		Op: *op, Clients: *clients, Conns: *conns, Requests: *total, Errors: errs, FirstErr: firstErr,
		Seconds: elapsed.Seconds(), OpsPerSec: float64(*total) / elapsed.Seconds(),
		P50Ms: pct(0.50), P90Ms: pct(0.90), P99Ms: pct(0.99), MaxMs: pct(1.0),
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
