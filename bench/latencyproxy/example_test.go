package latencyproxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/bench/latencyproxy"
)

// A local server (here an HTTP stand-in; DynamoDB Local in the
// benchmarks) reached through a proxy that adds a 20 ms round trip, so a
// request and its answer cost at least that, as they would to a server in
// the same region.
func ExampleStart() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "pong")
	}))
	defer srv.Close()

	const rtt = 20 * time.Millisecond
	p, err := latencyproxy.Start(srv.Listener.Addr().String(), rtt)
	if err != nil {
		panic(err)
	}
	defer p.Close()

	start := time.Now()
	resp, err := http.Get("http://" + p.Addr() + "/ping")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body), "after at least one round trip:", time.Since(start) >= rtt)
	fmt.Println("connections:", p.Connections())
	// Output:
	// pong after at least one round trip: true
	// connections: 1
}
