package mcpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts from the server's answers")

// TestTranscripts replays each JSON-RPC transcript in testdata/ against a
// fresh server (fixed clock, fixed tokens) and compares every answer with
// the golden one. A transcript is lines of
//
//	--> <who> [METHOD] <JSON-RPC request>  who: a token name, or "-" for none;
//	                                       METHOD (GET, DELETE) when not POST
//	<-- <HTTP status> <answer>             the answer as canonical JSON, or nothing
//
// `go test ./infra/mcpapi -run Transcripts -update` rewrites the answers.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.jsonrpc")
	if err != nil || len(files) < 4 {
		t.Fatalf("transcripts: %v %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s := newServer(t)
			var out bytes.Buffer
			requests := 0
			sc := bufio.NewScanner(bytes.NewReader(raw))
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			var want []string
			var got []string
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "<-- "):
					want = append(want, line)
					continue
				case !strings.HasPrefix(line, "--> "):
					out.WriteString(line + "\n")
					continue
				}
				out.WriteString(line + "\n")
				who, req, _ := strings.Cut(strings.TrimPrefix(line, "--> "), " ")
				if who == "-" {
					who = ""
				}
				method := "POST"
				for _, m := range []string{"GET", "DELETE", "PUT"} {
					if req == m || strings.HasPrefix(req, m+" ") {
						method, req = m, strings.TrimSpace(strings.TrimPrefix(req, m))
					}
				}
				status, body, hdr := s.request(who, method, []byte(req))
				if ct := hdr.Get("Content-Type"); len(body) > 0 && !strings.HasPrefix(ct, "application/json") {
					t.Errorf("answer %d is %s, not JSON: %s", requests+1, ct, body)
				}
				answer := fmt.Sprintf("<-- %d %s", status, canonical(t, body))
				got = append(got, strings.TrimRight(answer, " "))
				out.WriteString(got[len(got)-1] + "\n")
				requests++
			}
			if *update {
				if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if len(want) != requests {
				t.Fatalf("%d requests but %d golden answers; run with -update", requests, len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("answer %d differs\n got: %s\nwant: %s", i+1, got[i], want[i])
				}
			}
		})
	}
}

// canonical re-encodes JSON with sorted keys so that golden files compare
// byte for byte; a non-JSON body is kept as is.
func canonical(t *testing.T, body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return string(body)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
