package invoke_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// verifySigV4 checks the request's SigV4 Authorization header the way the
// service does: it rebuilds the request from the signed headers and the
// received body, signs it again with the same credentials and time, and
// compares.
func verifySigV4(r *http.Request, body []byte, creds aws.Credentials, region, service string) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("Authorization %q is not AWS4-HMAC-SHA256", auth)
	}
	fields := map[string]string{}
	for _, f := range strings.Split(rest, ", ") {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	date, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %v", err)
	}
	scope := fmt.Sprintf("%s/%s/%s/%s/aws4_request", creds.AccessKeyID, date.Format("20060102"), region, service)
	if fields["Credential"] != scope {
		return fmt.Errorf("Credential %q, want %q", fields["Credential"], scope)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	for _, h := range []string{"host", "x-amz-date", "x-amz-content-sha256", "x-amz-invocation-type"} {
		if !containsString(signed, h) {
			return fmt.Errorf("SignedHeaders %v lacks %s", signed, h)
		}
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != hash {
		return fmt.Errorf("X-Amz-Content-Sha256 %s, body hashes to %s", got, hash)
	}
	req, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	for _, h := range signed {
		if h == "host" || h == "content-length" {
			continue
		}
		req.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, service, region, date); err != nil {
		return err
	}
	if want := req.Header.Get("Authorization"); want != auth {
		return fmt.Errorf("signature mismatch:\n got %s\nwant %s", auth, want)
	}
	return nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestInvokeAPISigV4(t *testing.T) {
	t.Parallel()
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "token"}
	var mu sync.Mutex
	var problems []string
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		err := verifySigV4(r, body, creds, "us-east-1", "lambda")
		if err == nil && r.URL.Path != "/2015-03-31/functions/my-fn/invocations" {
			err = fmt.Errorf("path %s", r.URL.Path)
		}
		if err == nil && r.Header.Get("X-Amz-Invocation-Type") != "RequestResponse" {
			err = fmt.Errorf("X-Amz-Invocation-Type %q", r.Header.Get("X-Amz-Invocation-Type"))
		}
		if err == nil && r.Header.Get("X-Amz-Security-Token") != "token" {
			err = fmt.Errorf("X-Amz-Security-Token %q", r.Header.Get("X-Amz-Security-Token"))
		}
		if err != nil {
			mu.Lock()
			problems = append(problems, err.Error())
			mu.Unlock()
			w.Header().Set("X-Amzn-ErrorType", "InvalidSignatureException")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"message":%q}`, err.Error())
			return
		}
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		if bytes.Contains(body, []byte("fail")) {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			w.Write([]byte(`{"errorType":"Boom","errorMessage":"fail"}`))
			return
		}
		w.Write([]byte(`{"batchItemFailures":[]}`))
	}))
	defer srv.Close()

	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)}
	inv, err := invoke.InvokeAPI(srv.URL, "my-fn", invoke.InvokeAPISigV4(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	ctx := context.Background()
	resp, err := inv.Invoke(ctx, invocation.Invocation{Payload: []byte(`{"Records":[{"n":1}]}`), Timeout: 5 * time.Second})
	if err != nil || resp.FunctionError != "" || string(resp.Payload) != `{"batchItemFailures":[]}` {
		t.Fatalf("Invoke: %+v %v (server: %v)", resp, err, problems)
	}
	resp, err = inv.Invoke(ctx, invocation.Invocation{Payload: []byte(`{"fail":true}`), Timeout: 5 * time.Second})
	if err != nil || resp.FunctionError != "Unhandled" || resp.ErrorType != "Boom" {
		t.Fatalf("Invoke (function error): %+v %v (server: %v)", resp, err, problems)
	}
	if len(problems) > 0 || calls.Load() != 2 {
		t.Fatalf("%d calls, problems: %v", calls.Load(), problems)
	}

	// The check rejects a wrong key: the server must not accept anything.
	bad := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(creds.AccessKeyID, "wrong", creds.SessionToken)}
	inv2, err := invoke.InvokeAPI(srv.URL, "my-fn", invoke.InvokeAPISigV4(bad))
	if err != nil {
		t.Fatal(err)
	}
	defer inv2.Close()
	_, err = inv2.Invoke(ctx, invocation.Invocation{Payload: []byte(`{}`), Timeout: 5 * time.Second})
	if e, ok := err.(*invoke.InvokeAPIError); !ok || e.StatusCode != 403 || e.Type != "InvalidSignatureException" || !strings.Contains(string(e.Body), "signature mismatch") {
		t.Fatalf("wrong key: %v", err)
	}
}

// Credentials are retrieved per request, so expiring ones are refreshed.
func TestInvokeAPISigV4RefreshesCredentials(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	provider := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		i := n.Add(1)
		return aws.Credentials{AccessKeyID: fmt.Sprintf("AKID%d", i), SecretAccessKey: "secret", CanExpire: true, Expires: time.Now().Add(-time.Minute)}, nil
	})
	var keys []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		key := fmt.Sprintf("AKID%d", len(keys)+1)
		if err := verifySigV4(r, body, aws.Credentials{AccessKeyID: key, SecretAccessKey: "secret"}, "eu-west-1", "lambda"); err != nil {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(err.Error()))
			return
		}
		keys = append(keys, key)
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	inv, err := invoke.InvokeAPI(srv.URL, "f", invoke.InvokeAPISigV4(aws.Config{Region: "eu-west-1", Credentials: provider}))
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	for range 2 {
		if _, err := inv.Invoke(context.Background(), invocation.Invocation{Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(keys) != 2 {
		t.Fatalf("keys %v", keys)
	}
}

func TestInvokeAPISigV4Options(t *testing.T) {
	t.Parallel()
	if _, err := invoke.InvokeAPI("http://127.0.0.1:1", "f", invoke.InvokeAPISigV4(aws.Config{Credentials: aws.AnonymousCredentials{}})); err == nil || !strings.Contains(err.Error(), "Region") {
		t.Errorf("no region: %v", err)
	}
	if _, err := invoke.InvokeAPI("http://127.0.0.1:1", "f", invoke.InvokeAPISigV4(aws.Config{Region: "us-east-1"})); err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("no credentials: %v", err)
	}
}
