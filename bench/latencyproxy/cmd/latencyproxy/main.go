// Command latencyproxy puts a fixed round trip in front of a local server:
//
//	go run ./bench/latencyproxy/cmd/latencyproxy -upstream 127.0.0.1:8000 -rtt 50ms
//
// It prints its own address (http://127.0.0.1:PORT) on the first line of
// stdout and runs until SIGINT or SIGTERM, or until its parent exits.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/bench/latencyproxy"
)

func main() {
	upstream := flag.String("upstream", "", "host:port (or http://host:port) to forward to")
	rtt := flag.Duration("rtt", 50*time.Millisecond, "round trip added to every request and its answer (half each way)")
	flag.Parse()
	up := strings.TrimPrefix(strings.TrimPrefix(*upstream, "http://"), "https://")
	up = strings.TrimSuffix(up, "/")
	if up == "" {
		fmt.Fprintln(os.Stderr, "latencyproxy: -upstream is required")
		os.Exit(2)
	}
	p, err := latencyproxy.Start(up, *rtt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "latencyproxy:", err)
		os.Exit(1)
	}
	fmt.Println("http://" + p.Addr())
	done := make(chan os.Signal, 1)
	signal.Notify(done, syscall.SIGINT, syscall.SIGTERM)
	parent := os.Getppid()
	go func() {
		for range time.Tick(time.Second) {
			if os.Getppid() != parent {
				done <- syscall.SIGHUP
				return
			}
		}
	}()
	<-done
	p.Close()
}
