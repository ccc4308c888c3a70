package kafkacodec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ConfluentRegistry reads schemas from a Confluent-compatible Schema
// Registry REST API (GET /schemas/ids/{id}), Confluent Cloud and Redpanda
// included, and keeps each one for the life of the container.
type ConfluentRegistry struct {
	cache *Cache
	base  string
	cfg   confluentConfig
}

// A ConfluentOption configures a ConfluentRegistry.
type ConfluentOption func(*confluentConfig)

type confluentConfig struct {
	client     *http.Client
	user, pass string
	auth       bool
	errs       []error
}

// WithHTTPClient sets the HTTP client. Default: a client with a 10-second
// timeout.
func WithHTTPClient(c *http.Client) ConfluentOption {
	return func(cfg *confluentConfig) {
		if c == nil {
			cfg.errs = append(cfg.errs, errors.New("WithHTTPClient: client is nil"))
		}
		cfg.client = c
	}
}

// WithBasicAuth sends HTTP basic credentials (a Confluent Cloud API key
// and secret, for example).
func WithBasicAuth(user, password string) ConfluentOption {
	return func(cfg *confluentConfig) { cfg.user, cfg.pass, cfg.auth = user, password, true }
}

// NewConfluentRegistry returns a registry client for the registry at
// baseURL, e.g. "https://psrc-xxxxx.us-east-2.aws.confluent.cloud".
func NewConfluentRegistry(baseURL string, opts ...ConfluentOption) (*ConfluentRegistry, error) {
	cfg := confluentConfig{client: &http.Client{Timeout: 10 * time.Second}}
	for _, o := range opts {
		o(&cfg)
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		cfg.errs = append(cfg.errs, fmt.Errorf("registry URL %q is not an http(s) URL", baseURL))
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, fmt.Errorf("kafkacodec: confluent registry: %w", err)
	}
	r := &ConfluentRegistry{base: strings.TrimSuffix(baseURL, "/"), cfg: cfg}
	r.cache = NewCache(RegistryFunc(r.fetch))
	return r, nil
}

var _ Registry = (*ConfluentRegistry)(nil)

// Schema returns the schema with the decimal id.
func (r *ConfluentRegistry) Schema(ctx context.Context, id string) (Schema, error) {
	return r.cache.Schema(ctx, id)
}

func (r *ConfluentRegistry) fetch(ctx context.Context, id string) (Schema, error) {
	fail := func(notFound bool, err error) (Schema, error) {
		return Schema{}, &RegistryError{Registry: "confluent", ID: id, NotFound: notFound, Err: err}
	}
	if _, err := strconv.ParseUint(id, 10, 32); err != nil {
		return fail(true, errors.New("a Confluent schema id is a decimal number (is this a Glue schema version id?)"))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/schemas/ids/"+id, nil)
	if err != nil {
		return fail(false, err)
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/json")
	if r.cfg.auth {
		req.SetBasicAuth(r.cfg.user, r.cfg.pass)
	}
	resp, err := r.cfg.client.Do(req)
	if err != nil {
		return fail(false, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fail(false, err)
	}
	var out struct {
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
		ErrorCode  int    `json:"error_code"`
		Message    string `json:"message"`
	}
	jerr := json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(out.Message)
		if msg == "" {
			msg = strings.TrimSpace(string(body[:min(len(body), 200)]))
		}
		return fail(resp.StatusCode == http.StatusNotFound, fmt.Errorf("%s: %s", resp.Status, msg))
	}
	if jerr != nil || out.Schema == "" {
		return fail(false, fmt.Errorf("the answer has no schema: %s", body[:min(len(body), 200)]))
	}
	format := out.SchemaType
	if format == "" {
		format = "AVRO" // the registry leaves the type out for Avro
	}
	return Schema{ID: id, Format: format, Text: out.Schema}, nil
}
