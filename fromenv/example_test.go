package fromenv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/fromenv"
)

// A deployed function reads its dead letters, attempt limit and
// idempotency table from the variables the CDK constructs set, so what is
// deployed and what the handler does cannot drift apart; a bad value is an
// error at init, naming the variable.
func ExampleOptions() {
	dir, _ := os.MkdirTemp("", "fromenv-example")
	defer os.RemoveAll(dir)
	os.Setenv(fromenv.EnvDLQFile, filepath.Join(dir, "dead-letters.jsonl"))
	defer os.Unsetenv(fromenv.EnvDLQFile)

	os.Setenv(fromenv.EnvMaxAttempts, "three")
	_, err := fromenv.Options(context.Background(), events.SourceSQS)
	fmt.Println(err != nil)

	os.Setenv(fromenv.EnvMaxAttempts, "3")
	defer os.Unsetenv(fromenv.EnvMaxAttempts)
	opts, err := fromenv.Options(context.Background(), events.SourceSQS)
	// In main: lambda.Start(handlers.MustSQS(process, opts...))
	fmt.Println(len(opts), err)

	// Output:
	// true
	// 1 <nil>
}
