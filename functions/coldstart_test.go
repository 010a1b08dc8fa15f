package functions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/localdb"
)

// eventFor is the payload each function is cold-started with.
var eventFor = map[string]string{
	"get_manifest": "get_manifest", "whoami": "whoami", "post": "post", "get_thread": "get_thread",
	"list_threads": "list_threads", "mark": "mark", "confirm": "confirm", "reopen": "reopen", "events": "events",
	"inbox": "inbox", "get_claim": "get_claim", "list_claims": "list_claims", "mcp": "mcp_tools_list", "hello": "get_manifest",
}

// BenchmarkColdStart starts each function's bootstrap (and a hello-world
// Lambda built the same way) under the Runtime Interface Emulator, b.N times,
// invokes it once and reads the init duration from the emulator's INIT
// REPORT line. It reports the median init time, its ratio to hello-world's,
// and the size of the function's arm64 bootstrap as deployed.
func BenchmarkColdStart(b *testing.B) {
	rie := emulatorPath(b)
	db, err := localdb.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	client, _ := config.DynamoDB(context.Background(), db.URL)
	if err := dynamo.CreateTable(context.Background(), client, "cold"); err != nil {
		b.Fatal(err)
	}
	host, arm := b.TempDir(), b.TempDir()
	for _, target := range []struct{ dir, arch string }{{host, ""}, {arm, "arm64"}} {
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", target.dir+"/", "./...", "./testdata/hello")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if target.arch != "" {
			cmd.Env = append(cmd.Env, "GOOS=linux", "GOARCH="+target.arch)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("build: %v\n%s", err, out)
		}
	}
	env := []string{"PARLEY_TABLE=cold", "PARLEY_DYNAMODB=" + db.URL, "AWS_REGION=eu-west-1", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256"}
	initReport := regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)
	median := func(fn string) float64 {
		event, err := os.ReadFile("../events/" + eventFor[fn] + ".json")
		if err != nil {
			b.Fatal(err)
		}
		var ms []float64
		for i := 0; i < b.N; i++ {
			e := startEmulator(b, rie, filepath.Join(host, fn), env)
			e.invoke(b, event)
			var m []string
			for deadline := time.Now().Add(5 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				m = initReport.FindStringSubmatch(e.stdout.String() + e.stderr.String())
			}
			if m == nil {
				b.Fatalf("%s: no INIT REPORT", fn)
			}
			v, _ := strconv.ParseFloat(m[1], 64)
			ms = append(ms, v)
			e.stop()
		}
		sort.Float64s(ms)
		return ms[len(ms)/2]
	}
	hello := median("hello")
	helloInfo, _ := os.Stat(filepath.Join(arm, "hello"))
	for _, fn := range []string{"get_manifest", "whoami", "post", "get_thread", "list_threads", "mark", "confirm", "reopen", "events", "inbox", "get_claim", "list_claims", "mcp"} {
		b.Run(fn, func(b *testing.B) {
			init := median(fn)
			info, err := os.Stat(filepath.Join(arm, fn))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(init, "init-ms")
			b.ReportMetric(init/hello, "x-hello")
			b.ReportMetric(float64(info.Size())/1e6, "bootstrap-MB")
			b.ReportMetric(float64(info.Size())/float64(helloInfo.Size()), "size-x-hello")
		})
	}
	b.Logf("hello-world: init %.2f ms, bootstrap %.2f MB", hello, float64(helloInfo.Size())/1e6) // printed with -v
}
