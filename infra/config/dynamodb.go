// Package config turns flags and environment into the adapters' settings:
// the DynamoDB client, and for Lambda the whole configuration.
package config

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// AWS selects real DynamoDB with the default AWS configuration.
const AWS = "aws"

// retryer is the SDK's standard retryer (throttling and 5xx, jittered
// exponential backoff) bounded so that a request gives up well inside API
// Gateway's 30 s: 4 attempts, at most 500 ms between them.
func retryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 4
		o.MaxBackoff = 500 * time.Millisecond
	})
}

// awsConfig is the SDK configuration for endpoint: AWS (default
// credentials and region), or a local server's URL, which takes any
// credentials (fixed ones keep the SDK from looking for a profile).
func awsConfig(ctx context.Context, endpoint string) (aws.Config, error) {
	switch endpoint {
	case "":
		return aws.Config{}, errors.New("config: no AWS endpoint")
	case AWS:
		return awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRetryer(retryer))
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	return aws.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		Retryer:      retryer,
		BaseEndpoint: aws.String(endpoint),
	}, nil
}

// DynamoDB returns a client for endpoint: AWS for real DynamoDB, or the URL
// of a DynamoDB-compatible server. opts adjust the client (tests and
// benchmarks add middleware with them).
func DynamoDB(ctx context.Context, endpoint string, opts ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := awsConfig(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, opts...), nil
}

// SQS is a client for Amazon SQS (the push profile's delivery queue) on
// the same terms as DynamoDB: AWS, or a local server at endpoint (moto
// serves both services on one port).
func SQS(ctx context.Context, endpoint string) (*sqs.Client, error) {
	cfg, err := awsConfig(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	return sqs.NewFromConfig(cfg), nil
}
