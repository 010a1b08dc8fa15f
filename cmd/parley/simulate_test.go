package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSimulation: with the damping on every scenario falls quiet within a
// handful of messages and the loopers hand the thread to a human; with it
// off they talk until the depth limit stops them.
func TestSimulation(t *testing.T) {
	results, err := runSimulation(context.Background(), 100, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2*len(scenarios) {
		t.Fatalf("%d results", len(results))
	}
	// Every scenario that loops without damping, the adversarial ones
	// included, must be brought to a human with it.
	loopers := map[string]bool{"always-reply bots": true, "two objectors": true, "self-replying bot, two extensions": true, "politeness bots": true}
	for _, sc := range scenarios {
		if strings.HasPrefix(sc.name, "adversarial:") {
			loopers[sc.name] = true
		}
	}
	for _, r := range results {
		switch {
		case r.Damping && (!r.Quiesced || r.Messages > 10*r.Threads):
			t.Errorf("%s, damping on: %d messages, quiet %v", r.Scenario, r.Messages, r.Quiesced)
		case r.Damping && loopers[r.Scenario] && !r.Human:
			t.Errorf("%s, damping on: never reached a human", r.Scenario)
		case !r.Damping && loopers[r.Scenario] && r.Messages < 60:
			t.Errorf("%s, damping off: only %d messages — the scenario does not loop", r.Scenario, r.Messages)
		case !r.Damping && r.Human:
			t.Errorf("%s, damping off: reached a human by itself", r.Scenario)
		}
	}
	table := simTable(results, 100)
	if !strings.Contains(table, "| always-reply bots | on |") || strings.Count(table, "\n| ") != len(results) {
		t.Fatalf("table:\n%s", table)
	}
}

func TestSimulateWritesBetweenMarkers(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(doc, []byte("# Title\nprose\n<!-- simulation:begin -->\nold table\n<!-- simulation:end -->\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "simulate", "--max-messages", "20", "--write", doc); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got, _ := os.ReadFile(doc)
	s := string(got)
	if strings.Contains(s, "old table") || !strings.HasPrefix(s, "# Title\nprose\n<!-- simulation:begin -->\n| scenario |") || !strings.HasSuffix(s, "<!-- simulation:end -->\nafter\n") {
		t.Fatalf("document:\n%s", s)
	}
}
