package daemon

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSystem writes files (path relative to the fake root, e.g.
// "proc/self/cgroup") and returns a System rooted there.
func fakeSystem(t *testing.T, files map[string]string) System {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return System{ProcRoot: filepath.Join(root, "proc"), SysFSRoot: filepath.Join(root, "sys")}
}

const meminfo4G = "MemTotal:        3884532 kB\nMemFree:          123456 kB\nMemAvailable:    2097152 kB\nBuffers:            1234 kB\n"

func TestMemoryBudget(t *testing.T) {
	const svc = "/system.slice/edgellm.service"
	cases := []struct {
		name       string
		files      map[string]string
		wantLimit  uint64
		wantSource []string // substrings
	}{
		{
			name: "v2 memory.max",
			files: map[string]string{
				"proc/self/cgroup":                       "0::" + svc + "\n",
				"proc/meminfo":                           meminfo4G,
				"sys/fs/cgroup/cgroup.controllers":       "cpu memory pids\n",
				"sys/fs/cgroup" + svc + "/memory.max":    "536870912\n",
				"sys/fs/cgroup" + svc + "/memory.high":   "max\n",
				"sys/fs/cgroup/system.slice/memory.max":  "max\n",
				"sys/fs/cgroup/system.slice/memory.high": "max\n",
			},
			wantLimit:  512 * MiB,
			wantSource: []string{"cgroup v2 memory.max", "sys/fs/cgroup" + svc},
		},
		{
			name: "v2 memory.high below memory.max",
			files: map[string]string{
				"proc/self/cgroup":                     "0::" + svc + "\n",
				"proc/meminfo":                         meminfo4G,
				"sys/fs/cgroup/cgroup.controllers":     "memory\n",
				"sys/fs/cgroup" + svc + "/memory.max":  "536870912\n",
				"sys/fs/cgroup" + svc + "/memory.high": "402653184\n",
			},
			wantLimit:  384 * MiB,
			wantSource: []string{"memory.high"},
		},
		{
			name: "v2 parent slice is tighter",
			files: map[string]string{
				"proc/self/cgroup":                      "0::" + svc + "\n",
				"proc/meminfo":                          meminfo4G,
				"sys/fs/cgroup/cgroup.controllers":      "memory\n",
				"sys/fs/cgroup" + svc + "/memory.max":   "max\n",
				"sys/fs/cgroup/system.slice/memory.max": "268435456\n",
			},
			wantLimit:  256 * MiB,
			wantSource: []string{"memory.max of", "system.slice"},
		},
		{
			name: "v2 all max falls back to MemAvailable",
			files: map[string]string{
				"proc/self/cgroup":                     "0::" + svc + "\n",
				"proc/meminfo":                         meminfo4G,
				"sys/fs/cgroup/cgroup.controllers":     "memory\n",
				"sys/fs/cgroup" + svc + "/memory.max":  "max\n",
				"sys/fs/cgroup" + svc + "/memory.high": "max\n",
			},
			wantLimit:  2097152 * 1024,
			wantSource: []string{"MemAvailable"},
		},
		{
			name: "v2 files missing falls back to MemAvailable",
			files: map[string]string{
				"proc/self/cgroup":                 "0::" + svc + "\n",
				"proc/meminfo":                     meminfo4G,
				"sys/fs/cgroup/cgroup.controllers": "memory\n",
			},
			wantLimit:  2097152 * 1024,
			wantSource: []string{"MemAvailable"},
		},
		{
			name: "v2 container without cgroup namespace (mount root is not /)",
			files: map[string]string{
				"proc/self/cgroup":         "0::/docker/abc123\n",
				"proc/self/mountinfo":      "22 1 0:20 / /sys rw - sysfs sysfs rw\n30 22 0:26 /docker/abc123 /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
				"proc/meminfo":             meminfo4G,
				"sys/fs/cgroup/memory.max": "209715200\n",
			},
			wantLimit:  200 * MiB,
			wantSource: []string{"cgroup v2 memory.max of", filepath.Join("sys", "fs", "cgroup")},
		},
		{
			name: "v2 mount point with an escaped space",
			files: map[string]string{
				"proc/self/cgroup":              "0::/a\n",
				"proc/self/mountinfo":           "30 22 0:26 / /sys/fs/my\\040cgroup rw - cgroup2 cgroup2 rw\n",
				"proc/meminfo":                  meminfo4G,
				"sys/fs/my cgroup/a/memory.max": "104857600\n",
			},
			wantLimit:  100 * MiB,
			wantSource: []string{"my cgroup/a"},
		},
		{
			name: "v1 memory.limit_in_bytes",
			files: map[string]string{
				"proc/self/cgroup": "12:pids:/user.slice\n9:memory:/user.slice/app\n4:cpu,cpuacct:/user.slice\n",
				"proc/meminfo":     meminfo4G,
				"sys/fs/cgroup/memory/user.slice/app/memory.limit_in_bytes": "268435456\n",
				"sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes":     "9223372036854771712\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes":                "9223372036854771712\n",
			},
			wantLimit:  256 * MiB,
			wantSource: []string{"cgroup v1 memory.limit_in_bytes", "user.slice/app"},
		},
		{
			name: "v1 huge value is unlimited",
			files: map[string]string{
				"proc/self/cgroup": "9:memory:/user.slice\n",
				"proc/meminfo":     meminfo4G,
				"sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes": "9223372036854771712\n",
			},
			wantLimit:  2097152 * 1024,
			wantSource: []string{"MemAvailable"},
		},
		{
			name: "hybrid: v1 memory controller beside the unified tree",
			files: map[string]string{
				"proc/self/cgroup": "10:memory:" + svc + "\n3:cpu,cpuacct:" + svc + "\n0::" + svc + "\n",
				"proc/meminfo":     meminfo4G,
				"sys/fs/cgroup/memory" + svc + "/memory.limit_in_bytes": "314572800\n",
				"sys/fs/cgroup/unified" + svc + "/cgroup.procs":         "1\n",
			},
			wantLimit:  300 * MiB,
			wantSource: []string{"cgroup v1", "memory" + svc},
		},
		{
			name: "hybrid located through mountinfo",
			files: map[string]string{
				"proc/self/cgroup": "10:memory:" + svc + "\n0::" + svc + "\n",
				"proc/self/mountinfo": "25 24 0:22 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n" +
					"26 25 0:23 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n" +
					"33 25 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" +
					"34 25 0:31 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
				"proc/meminfo": meminfo4G,
				"sys/fs/cgroup/memory" + svc + "/memory.limit_in_bytes": "157286400\n",
			},
			wantLimit:  150 * MiB,
			wantSource: []string{"cgroup v1"},
		},
		{
			name: "limit above physical memory is capped at MemTotal",
			files: map[string]string{
				"proc/self/cgroup":                    "0::" + svc + "\n",
				"proc/meminfo":                        meminfo4G,
				"sys/fs/cgroup/cgroup.controllers":    "memory\n",
				"sys/fs/cgroup" + svc + "/memory.max": "17179869184\n",
			},
			wantLimit:  3884532 * 1024,
			wantSource: []string{"MemTotal", "below the cgroup v2 memory.max", "16384 MiB"},
		},
		{
			name: "no cgroup file at all",
			files: map[string]string{
				"proc/meminfo": meminfo4G,
			},
			wantLimit:  2097152 * 1024,
			wantSource: []string{"MemAvailable"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := fakeSystem(t, tc.files).MemoryBudget()
			if err != nil {
				t.Fatal(err)
			}
			if b.Limit != tc.wantLimit {
				t.Errorf("Limit = %d (%s), want %d", b.Limit, formatMiB(b.Limit), tc.wantLimit)
			}
			for _, s := range tc.wantSource {
				if !strings.Contains(b.Source, s) {
					t.Errorf("Source %q lacks %q", b.Source, s)
				}
			}
			if b.Available != 2097152*1024 || b.Total != 3884532*1024 {
				t.Errorf("Available = %d, Total = %d", b.Available, b.Total)
			}
		})
	}
}

func TestMemoryBudgetErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"nothing readable", map[string]string{"proc/self/cgroup": "0::/\n"}, "no cgroup memory limit and cannot read meminfo"},
		{"no MemAvailable", map[string]string{"proc/meminfo": "MemTotal: 1000 kB\n"}, "no MemAvailable"},
		{"garbage limit", map[string]string{
			"proc/self/cgroup":                 "0::/a\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/a/memory.max":       "lots\n",
		}, `not a byte count: "lots"`},
		{"garbage meminfo", map[string]string{"proc/meminfo": "MemAvailable: many kB\n"}, "bad MemAvailable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := fakeSystem(t, tc.files).MemoryBudget()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "daemon: memory: ") {
				t.Fatalf("got %+v, %v; want error containing %q", b, err, tc.want)
			}
		})
	}
}

func TestMemoryBudgetRealSystem(t *testing.T) {
	b, err := System{}.MemoryBudget()
	if err != nil {
		t.Fatalf("reading this machine's budget: %v", err)
	}
	if b.Limit == 0 || b.Source == "" {
		t.Errorf("budget %+v", b)
	}
	used, err := System{}.MemoryUsed()
	if err != nil || used == 0 {
		t.Errorf("MemoryUsed = %d, %v", used, err)
	}
}

func TestMemoryUsed(t *testing.T) {
	s := fakeSystem(t, map[string]string{"proc/self/status": "Name:\tedgellm\nVmPeak:\t  999 kB\nVmRSS:\t   12345 kB\nThreads:\t4\n"})
	if got, err := s.MemoryUsed(); err != nil || got != 12345*1024 {
		t.Errorf("MemoryUsed = %d, %v; want %d", got, err, 12345*1024)
	}
	s = fakeSystem(t, map[string]string{"proc/self/status": "Name:\tedgellm\n"})
	if _, err := s.MemoryUsed(); err == nil || !strings.Contains(err.Error(), "no VmRSS") {
		t.Errorf("missing VmRSS: %v", err)
	}
}

func TestPlan(t *testing.T) {
	kv := uint64(22 * 256 * 2 * 2) // TinyLlama-1.1B: 22 layers, 4 KV heads × 64, FP16 K and V

	t.Run("context does not fit", func(t *testing.T) {
		_, err := Plan(PlanInput{Budget: 100 * MiB, Overhead: 60 * MiB, ModelBytes: 600 * MiB, Context: 4096, KVBytesPerToken: kv})
		if err == nil {
			t.Fatal("no error")
		}
		for _, want := range []string{
			"daemon: memory: context 4096 needs 88 MiB of KV cache, budget leaves 40 MiB",
			"(budget 100 MiB minus 60 MiB overhead)",
			"the largest context that fits is 1861",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})

	t.Run("model resident", func(t *testing.T) {
		p, err := Plan(PlanInput{Budget: 1024 * MiB, Overhead: 64 * MiB, ModelBytes: 600 * MiB, Context: 2048, KVBytesPerToken: kv})
		if err != nil {
			t.Fatal(err)
		}
		if p.KVBytes != 44*MiB || !p.ModelResident || p.Warning != "" || p.HeapLimit != 424*MiB {
			t.Errorf("plan %+v", p)
		}
		if p.MaxContext != int(960*MiB/kv) {
			t.Errorf("MaxContext = %d", p.MaxContext)
		}
	})

	t.Run("repacked weights", func(t *testing.T) {
		// 520 MiB of the 600 MiB file copied to the heap: the model stays
		// resident, the heap limit grows by them.
		p, err := Plan(PlanInput{Budget: 1024 * MiB, Overhead: 64 * MiB, ModelBytes: 600 * MiB, RepackBytes: 520 * MiB, Context: 2048, KVBytesPerToken: kv})
		if err != nil {
			t.Fatal(err)
		}
		if !p.ModelResident || p.HeapLimit != 944*MiB || p.MaxContext != int(440*MiB/kv) {
			t.Errorf("plan %+v", p)
		}
		// The rest of a large file pages; the copied weights cannot.
		p, err = Plan(PlanInput{Budget: 1024 * MiB, Overhead: 64 * MiB, ModelBytes: 2000 * MiB, RepackBytes: 500 * MiB, Context: 2048, KVBytesPerToken: kv})
		if err != nil {
			t.Fatal(err)
		}
		if p.ModelResident || p.HeapLimit != 608*MiB || !strings.Contains(p.Warning, "the part of the model file model.repack does not copy (1500 MiB) is larger than the 416 MiB") {
			t.Errorf("plan %+v", p)
		}
		_, err = Plan(PlanInput{Budget: 1024 * MiB, Overhead: 64 * MiB, ModelBytes: 2000 * MiB, RepackBytes: 1000 * MiB, Context: 2048, KVBytesPerToken: kv})
		if err == nil || !strings.Contains(err.Error(), "model.repack copies 1000 MiB of weights to the heap, and the budget leaves 960 MiB") {
			t.Errorf("repack larger than the budget: error %v", err)
		}
		_, err = Plan(PlanInput{Budget: 1024 * MiB, Overhead: 64 * MiB, ModelBytes: 1000 * MiB, RepackBytes: 900 * MiB, Context: 4096, KVBytesPerToken: kv})
		if err == nil || !strings.Contains(err.Error(), "budget leaves 60 MiB (budget 1024 MiB minus 64 MiB overhead and 900 MiB of weights model.repack copies)") {
			t.Errorf("context beside repacked weights: error %v", err)
		}
	})

	t.Run("model pages from disk", func(t *testing.T) {
		p, err := Plan(PlanInput{Budget: 1024 * MiB, Overhead: 64 * MiB, ModelBytes: 2000 * MiB, Context: 2048, KVBytesPerToken: kv})
		if err != nil {
			t.Fatal(err)
		}
		if p.ModelResident || p.HeapLimit != 108*MiB {
			t.Errorf("plan %+v", p)
		}
		if !strings.Contains(p.Warning, "model file (2000 MiB) is larger than the 916 MiB") || !strings.Contains(p.Warning, "page from disk") {
			t.Errorf("warning %q", p.Warning)
		}
	})

	t.Run("exact fit", func(t *testing.T) {
		p, err := Plan(PlanInput{Budget: 64*MiB + 44*MiB, Overhead: 64 * MiB, Context: 2048, KVBytesPerToken: kv})
		if err != nil || p.MaxContext != 2048 || !p.ModelResident {
			t.Errorf("plan %+v, %v", p, err)
		}
		_, err = Plan(PlanInput{Budget: 64*MiB + 44*MiB - 1, Overhead: 64 * MiB, Context: 2048, KVBytesPerToken: kv})
		if err == nil || !strings.Contains(err.Error(), "budget leaves 43.9 MiB") {
			t.Errorf("one byte short: %v", err)
		}
	})

	// Gemma 3 1B's shape: 4 global layers grow with the context, the 22
	// sliding-window rings (512 + 31 positions of 256 values) do not.
	t.Run("sliding-window rings", func(t *testing.T) {
		per, fixed := uint64(4*256*4), uint64(22*543*256*4)
		p, err := Plan(PlanInput{Budget: 64*MiB + 40*MiB, Overhead: 64 * MiB, Context: 4096, KVBytesPerToken: per, KVBytesFixed: fixed})
		if err != nil {
			t.Fatal(err)
		}
		if p.KVBytes != 4096*per+fixed || p.MaxContext != int((40*MiB-fixed)/per) {
			t.Errorf("plan %+v", p)
		}
		p, err = Plan(PlanInput{Budget: 64*MiB + fixed, Overhead: 64 * MiB, Context: 100000, KVBytesFixed: fixed})
		if err != nil || p.MaxContext != math.MaxInt32 {
			t.Errorf("every layer a ring: plan %+v, %v", p, err)
		}
		_, err = Plan(PlanInput{Budget: 64*MiB + fixed, Overhead: 64 * MiB, Context: 1, KVBytesPerToken: per, KVBytesFixed: fixed})
		if err == nil || !strings.Contains(err.Error(), "the largest context that fits is 0") {
			t.Errorf("room for the rings only: %v", err)
		}
	})

	for _, bad := range []struct {
		name string
		in   PlanInput
		want string
	}{
		{"zero budget", PlanInput{Context: 1, KVBytesPerToken: 1}, "budget is 0"},
		{"zero kv", PlanInput{Budget: MiB, Context: 1}, "positive context and KV size"},
		{"overhead eats budget", PlanInput{Budget: 64 * MiB, Overhead: 64 * MiB, Context: 1, KVBytesPerToken: 1}, "overhead of 64 MiB leaves nothing of the 64 MiB budget"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := Plan(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("got %v, want %q", err, bad.want)
			}
		})
	}
}

func TestAutoSlots(t *testing.T) {
	for _, c := range []struct {
		cpus          int
		total, budget uint64
		want          int
	}{
		{4, 16 * GiB, 16 * GiB, 4}, // a Pi 5 with 16 GiB: 4 CPUs
		{8, 8 * GiB, 8 * GiB, 4},   // 8 GiB of RAM
		{8, 16 * GiB, 2 * GiB, 8},  // a big machine; the budget limits by memory, not here
		{16, 0, 4 * GiB, 4},        // RAM unknown: the budget stands in
		{16, 0, 32 * GiB, 8},
	} {
		if got := AutoSlots(c.cpus, c.total, c.budget); got != c.want {
			t.Errorf("AutoSlots(%d, %s, %s) = %d, want %d", c.cpus, formatMiB(c.total), formatMiB(c.budget), got, c.want)
		}
	}
	// What MemoryBudget reads of a board with 4 GiB of RAM makes it
	// Pi-class whatever its CPUs.
	b, err := fakeSystem(t, map[string]string{"proc/meminfo": meminfo4G}).MemoryBudget()
	if err != nil {
		t.Fatal(err)
	}
	if got := AutoSlots(16, b.Total, b.Limit); got != 4 {
		t.Errorf("a 4 GiB board: %d slots", got)
	}
}

func TestPlanSlots(t *testing.T) {
	kv := uint64(22 * 256 * 2 * 2) // TinyLlama-1.1B, FP16: 44 MiB per slot at 2048
	in := func(budget uint64, slots, auto int) PlanInput {
		return PlanInput{Budget: budget, Overhead: 64 * MiB, ModelBytes: 600 * MiB, Context: 2048, KVBytesPerToken: kv,
			Slots: slots, MaxAutoSlots: auto}
	}

	t.Run("auto takes the cap when memory allows", func(t *testing.T) {
		for _, auto := range []int{4, 8} {
			p, err := Plan(in(4*GiB, 0, auto))
			if err != nil || p.Slots != auto || p.KVBytes != uint64(auto)*44*MiB || !p.ModelResident {
				t.Errorf("cap %d: plan %+v, %v", auto, p, err)
			}
		}
	})

	t.Run("auto keeps the model resident", func(t *testing.T) {
		budget := uint64(64*MiB + 600*MiB + 3*44*MiB)
		p, err := Plan(in(budget, 0, 8))
		if err != nil || p.Slots != 3 || !p.ModelResident || p.Warning != "" || p.HeapLimit != int64(budget-600*MiB) {
			t.Errorf("plan %+v, %v", p, err)
		}
		if p.MaxSlots != int((budget-64*MiB)/(44*MiB)) {
			t.Errorf("MaxSlots = %d", p.MaxSlots)
		}
		p, err = Plan(in(budget-1, 0, 8))
		if err != nil || p.Slots != 2 {
			t.Errorf("one byte short: plan %+v, %v", p, err)
		}
	})

	t.Run("auto counts the further slots' buffers", func(t *testing.T) {
		pi := in(64*MiB+600*MiB+3*44*MiB+2*10*MiB, 0, 8)
		pi.SlotBytes = 10 * MiB
		p, err := Plan(pi)
		if err != nil || p.Slots != 3 || p.SlotBytes != 20*MiB || !p.ModelResident {
			t.Errorf("plan %+v, %v", p, err)
		}
		pi.Budget--
		if p, err := Plan(pi); err != nil || p.Slots != 2 {
			t.Errorf("one byte short: plan %+v, %v", p, err)
		}
	})

	t.Run("auto gives one slot when the model cannot stay resident", func(t *testing.T) {
		p, err := Plan(in(64*MiB+44*MiB+100*MiB, 0, 4))
		if err != nil || p.Slots != 1 || p.ModelResident || p.Warning == "" {
			t.Errorf("plan %+v, %v", p, err)
		}
		if _, err := Plan(in(64*MiB+44*MiB-1, 0, 4)); err == nil || !strings.Contains(err.Error(), "context 2048 needs 44 MiB") {
			t.Errorf("not even one slot: %v", err)
		}
	})

	t.Run("explicit slots that fit", func(t *testing.T) {
		// Two slots fit beside the overhead; the model then pages, as a
		// context that leaves it no room does.
		p, err := Plan(in(64*MiB+2*44*MiB+100*MiB, 2, 4))
		if err != nil || p.Slots != 2 || p.KVBytes != 88*MiB || p.ModelResident || p.Warning == "" {
			t.Errorf("plan %+v, %v", p, err)
		}
		if p.MaxContext != int((2*44*MiB+100*MiB)/2/kv) {
			t.Errorf("MaxContext = %d", p.MaxContext)
		}
	})

	t.Run("explicit slots that do not fit", func(t *testing.T) {
		_, err := Plan(in(64*MiB+3*44*MiB, 4, 4))
		if err == nil {
			t.Fatal("no error")
		}
		for _, want := range []string{
			"queue.slots 4 at context 2048 needs 176 MiB of KV cache and buffers, budget leaves 132 MiB",
			"slots that fit at this context: 3",
			"context that fits 4 slots: 1536",
			"lower queue.slots (0: as many as fit) or model.context",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
}
