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

// DynamoDB returns a client for endpoint: AWS for real DynamoDB (default
// credentials and region), or the URL of a DynamoDB-compatible server.
// opts adjust the client (tests and benchmarks add middleware with them).
func DynamoDB(ctx context.Context, endpoint string, opts ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	switch endpoint {
	case "":
		return nil, errors.New("config: no DynamoDB endpoint")
	case AWS:
		cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRetryer(retryer))
		if err != nil {
			return nil, err
		}
		return dynamodb.NewFromConfig(cfg, opts...), nil
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	// A local server takes any credentials; fixed ones keep the SDK from
	// looking for a profile.
	cfg := aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		Retryer:     retryer,
	}
	opts = append([]func(*dynamodb.Options){func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) }}, opts...)
	return dynamodb.NewFromConfig(cfg, opts...), nil
}

// SQS is a client for Amazon SQS (the push profile's delivery queue) on
// the same terms as DynamoDB: AWS, or a local server at endpoint (moto
// serves both services on one port).
func SQS(ctx context.Context, endpoint string) (*sqs.Client, error) {
	switch endpoint {
	case "":
		return nil, errors.New("config: no SQS endpoint")
	case AWS:
		cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRetryer(retryer))
		if err != nil {
			return nil, err
		}
		return sqs.NewFromConfig(cfg), nil
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), Retryer: retryer}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) }), nil
}
