// Command dynamodblocal starts DynamoDB Local (as internal/localaws installs
// and runs it for the tests), prints its endpoint on the first line of
// stdout, and stops it on SIGINT or SIGTERM, or when its parent exits. It lets
// scripts/bench-peers.sh give both sides of the idempotency benchmark the
// same server:
//
//	go run ./bench/dynamodblocal
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/localaws"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), localaws.InstallTimeout+localaws.StartTimeout)
	srv, err := localaws.Start(ctx, localaws.KindDynamoDB)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dynamodblocal:", err)
		os.Exit(1)
	}
	fmt.Println(srv.Endpoint)
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
	stop := make(chan error, 1)
	go func() { stop <- srv.Stop() }()
	select {
	case err = <-stop:
	case <-time.After(10 * time.Second):
		err = fmt.Errorf("stopping pid %d timed out", srv.PID())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dynamodblocal:", err)
		os.Exit(1)
	}
}
