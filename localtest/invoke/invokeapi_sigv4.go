package invoke

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// InvokeAPISigV4 signs every Invoke request with AWS Signature Version 4
// for the service "lambda" in cfg.Region, with the credentials of
// cfg.Credentials (for AWS itself: config.LoadDefaultConfig, the default
// credential chain). The payload hash is the request body's SHA-256, also
// sent as X-Amz-Content-Sha256. Credentials are retrieved for each request
// through a cache (cfg.Credentials as loaded by config.LoadDefaultConfig is
// one already; any other provider is wrapped in one), so expiring
// credentials are refreshed.
func InvokeAPISigV4(cfg aws.Config) InvokeAPIOption {
	return func(i *InvokeAPIInvoker) error {
		sign, err := sigV4Signer(cfg, "lambda")
		if err != nil {
			return err
		}
		i.sign = sign
		return nil
	}
}

// sigV4Signer returns a request signer for the service in cfg.Region.
func sigV4Signer(cfg aws.Config, service string) (func(*http.Request, []byte) error, error) {
	if cfg.Region == "" {
		return nil, errors.New("InvokeAPISigV4: no Region in the AWS configuration (set AWS_REGION or the mapping's Region)")
	}
	if cfg.Credentials == nil {
		return nil, errors.New("InvokeAPISigV4: no credentials provider in the AWS configuration")
	}
	creds := cfg.Credentials
	if _, ok := creds.(*aws.CredentialsCache); !ok {
		creds = aws.NewCredentialsCache(creds)
	}
	region := cfg.Region
	signer := v4.NewSigner()
	return func(req *http.Request, body []byte) error {
		c, err := creds.Retrieve(req.Context())
		if err != nil {
			return fmt.Errorf("AWS credentials: %w", err)
		}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])
		req.Header.Set("X-Amz-Content-Sha256", hash)
		return signer.SignHTTP(req.Context(), c, req, hash, service, region, time.Now().UTC())
	}, nil
}
