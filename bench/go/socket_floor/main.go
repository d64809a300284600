// Go's floor for the attack bench's rows on many connections and the SETTINGS flood (bench/attacks.bench.ts):
// what the Go runtime itself spends holding the same sockets, with no gRPC and no etcd on them — the twin of
// bench/socket_floor_server.mjs, so a row can show etcd over Go's floor beside etcdsim over Node's.
//
//	net:      accept, then read and discard what comes (a goroutine and a read buffer per connection, as
//	          etcd's cmux holds a connection while it waits for the bytes that pick its protocol)
//	http:     net/http configured as etcd configures its client port's HTTP side (no read or idle timeouts,
//	          MaxHeaderBytes 1 MiB), answering 404
//	settings: HTTP/2 frames read and dropped but SETTINGS, each answered with its ACK by a writer goroutine
//	          through a queue of 50 (grpc-go's maxQueuedTransportResponseFrames): the reader blocks while the
//	          queue is full, so a peer that never reads is throttled as grpc-go throttles it
//
// Usage: socket_floor net|http|settings PORT → prints "socket floor on 127.0.0.1:PORT".
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

var settingsAck = []byte{0, 0, 0, 4, 1, 0, 0, 0, 0}

func discard(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

func settings(c net.Conn) {
	defer c.Close()
	acks := make(chan struct{}, 50)
	go func() {
		w := bufio.NewWriter(c)
		for range acks {
			w.Write(settingsAck)
			if len(acks) == 0 && w.Flush() != nil {
				c.Close() // the reader's next read fails; until then its acks are dropped here
				for range acks {
				}
				return
			}
		}
	}()
	defer close(acks)
	r := bufio.NewReaderSize(c, 32*1024)
	preface := make([]byte, 24)
	if _, err := io.ReadFull(r, preface); err != nil {
		return
	}
	head := make([]byte, 9)
	for {
		if _, err := io.ReadFull(r, head); err != nil {
			return
		}
		n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
		if _, err := r.Discard(n); err != nil {
			return
		}
		if head[3] == 4 && head[4]&1 == 0 {
			acks <- struct{}{}
		}
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: socket_floor net|http|settings PORT")
		os.Exit(2)
	}
	kind, addr := os.Args[1], "127.0.0.1:"+os.Args[2]
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		os.Exit(0)
	}()
	fmt.Printf("socket floor on %s\n", addr)
	if kind == "http" {
		s := &http.Server{MaxHeaderBytes: 1 << 20, Handler: http.NotFoundHandler()}
		s.Serve(l)
		return
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		if kind == "settings" {
			go settings(c)
		} else {
			go discard(c)
		}
	}
}
