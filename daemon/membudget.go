package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgellm/edgellm/inference"
)

// System locates the kernel's pseudo-files. The zero value reads the real
// /proc and /sys; tests point the roots at fake trees.
type System struct {
	// ProcRoot replaces /proc ("" = "/proc").
	ProcRoot string
	// SysFSRoot replaces /sys ("" = "/sys").
	SysFSRoot string
}

func (s System) proc(rel string) string {
	root := s.ProcRoot
	if root == "" {
		root = "/proc"
	}
	return filepath.Join(root, rel)
}

// sys maps an absolute path under /sys (as found in mountinfo) to SysFSRoot.
// Paths outside /sys are returned unchanged.
func (s System) sys(abs string) string {
	root := s.SysFSRoot
	if root == "" {
		root = "/sys"
	}
	if abs == "/sys" || strings.HasPrefix(abs, "/sys/") {
		return filepath.Join(root, strings.TrimPrefix(abs, "/sys"))
	}
	return abs
}

// unlimitedV1 is the threshold at or above which a cgroup v1
// memory.limit_in_bytes means "no limit" (the kernel reports LONG_MAX rounded
// down to a page).
const unlimitedV1 = 1 << 60

// MemoryBudget is how much memory the daemon may use and where that number
// came from.
type MemoryBudget struct {
	// Limit is the budget in bytes: the tightest cgroup limit (memory.max or
	// memory.high on cgroup v2, memory.limit_in_bytes on v1, of our cgroup or
	// any ancestor) capped at MemTotal, or MemAvailable when no cgroup limits
	// us.
	Limit uint64
	// Source says where Limit came from, e.g.
	// "cgroup v2 memory.max of /sys/fs/cgroup/system.slice/edgellm.service".
	Source string
	// Available is MemAvailable from /proc/meminfo at the time of reading, or
	// 0 when unknown. It can be lower than Limit when other programs use the
	// memory the cgroup would allow us.
	Available uint64
	// Total is MemTotal from /proc/meminfo, the machine's RAM, or 0 when
	// unknown (AutoSlots tells a Pi-class board by it).
	Total uint64
}

// MemoryBudget reads the cgroup memory limit of this process (cgroup v2, v1
// or a hybrid of both) and falls back to MemAvailable from /proc/meminfo.
func (s System) MemoryBudget() (MemoryBudget, error) {
	total, avail, memErr := s.meminfo()
	var b MemoryBudget
	if memErr == nil {
		b.Available, b.Total = avail, total
	}
	limit, source, err := s.cgroupLimit()
	if err != nil {
		return MemoryBudget{}, err
	}
	if limit > 0 {
		b.Limit, b.Source = limit, source
		if memErr == nil && total > 0 && total < limit {
			b.Limit = total
			b.Source = fmt.Sprintf("MemTotal in %s (below the %s of %s)", s.proc("meminfo"), source, formatMiB(limit))
		}
		return b, nil
	}
	if memErr != nil {
		return MemoryBudget{}, fmt.Errorf("daemon: memory: no cgroup memory limit and %w", memErr)
	}
	if avail == 0 {
		return MemoryBudget{}, fmt.Errorf("daemon: memory: no cgroup memory limit and no MemAvailable in %s", s.proc("meminfo"))
	}
	b.Limit, b.Source = avail, "MemAvailable in "+s.proc("meminfo")
	return b, nil
}

// meminfo returns MemTotal and MemAvailable in bytes.
func (s System) meminfo() (total, avail uint64, err error) {
	f, err := os.Open(s.proc("meminfo"))
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read meminfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "MemTotal" && name != "MemAvailable") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, perr := strconv.ParseUint(fields[0], 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("%s: bad %s value %q", s.proc("meminfo"), name, fields[0])
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		if name == "MemTotal" {
			total = v
		} else {
			avail = v
		}
	}
	return total, avail, sc.Err()
}

// cgroupMount is where a cgroup hierarchy is mounted: Root is the cgroup path
// shown at MountPoint (not "/" inside some containers).
type cgroupMount struct {
	Root, MountPoint string
}

// cgroupLimit returns the tightest memory limit that applies to this process,
// or 0 when none does.
func (s System) cgroupLimit() (uint64, string, error) {
	data, err := os.ReadFile(s.proc("self/cgroup"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, "", nil // no cgroups (or no /proc): no limit from them
	}
	if err != nil {
		return 0, "", fmt.Errorf("daemon: memory: %w", err)
	}
	var v2Path, v1Path string
	var haveV2, haveV1 bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, haveV2 = parts[2], true
			continue
		}
		for _, ctrl := range strings.Split(parts[1], ",") {
			if ctrl == "memory" {
				v1Path, haveV1 = parts[2], true
			}
		}
	}
	v2Mount, v1Mount := s.cgroupMounts()

	var best uint64
	var bestSource string
	consider := func(v uint64, source string) {
		if v > 0 && (best == 0 || v < best) {
			best, bestSource = v, source
		}
	}
	// Hybrid layouts have both lines; memory is then a v1 controller and the
	// unified tree holds no memory.* files, so looking at both is safe.
	if haveV1 {
		if v1Mount.MountPoint == "" {
			v1Mount = cgroupMount{Root: "/", MountPoint: "/sys/fs/cgroup/memory"}
		}
		for _, dir := range ancestry(s.sys(v1Mount.MountPoint), v1Mount.Root, v1Path) {
			v, ok, err := readLimit(filepath.Join(dir, "memory.limit_in_bytes"))
			if err != nil {
				return 0, "", err
			}
			if ok && v < unlimitedV1 {
				consider(v, "cgroup v1 memory.limit_in_bytes of "+dir)
			}
		}
	}
	if haveV2 {
		if v2Mount.MountPoint == "" {
			v2Mount = s.defaultV2Mount()
		}
		for _, dir := range ancestry(s.sys(v2Mount.MountPoint), v2Mount.Root, v2Path) {
			for _, name := range []string{"memory.max", "memory.high"} {
				v, ok, err := readLimit(filepath.Join(dir, name))
				if err != nil {
					return 0, "", err
				}
				if ok {
					consider(v, "cgroup v2 "+name+" of "+dir)
				}
			}
		}
	}
	return best, bestSource, nil
}

// defaultV2Mount guesses the unified mount when mountinfo is unavailable:
// /sys/fs/cgroup on a pure v2 system, /sys/fs/cgroup/unified on a hybrid one.
func (s System) defaultV2Mount() cgroupMount {
	if _, err := os.Stat(s.sys("/sys/fs/cgroup/cgroup.controllers")); err == nil {
		return cgroupMount{Root: "/", MountPoint: "/sys/fs/cgroup"}
	}
	return cgroupMount{Root: "/", MountPoint: "/sys/fs/cgroup/unified"}
}

// cgroupMounts reads /proc/self/mountinfo for the cgroup2 mount and the v1
// mount carrying the memory controller. Missing entries are left empty.
func (s System) cgroupMounts() (v2, v1 cgroupMount) {
	data, err := os.ReadFile(s.proc("self/mountinfo"))
	if err != nil {
		return v2, v1
	}
	for _, line := range strings.Split(string(data), "\n") {
		// id parent major:minor root mountpoint options [optional…] - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := cgroupMount{Root: unescapeMount(f[3]), MountPoint: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup2":
			if v2.MountPoint == "" {
				v2 = m
			}
		case "cgroup":
			if len(g) >= 3 && v1.MountPoint == "" {
				for _, opt := range strings.Split(g[2], ",") {
					if opt == "memory" {
						v1 = m
					}
				}
			}
		}
	}
	return v2, v1
}

// unescapeMount undoes mountinfo's octal escapes (\040 for space, …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ancestry lists the directories of cgroup path cg (as in /proc/self/cgroup)
// under a mount whose root is root, from cg itself up to the mount point.
// A path outside the mount's root (a container's view) maps to the mount
// point itself.
func ancestry(mountPoint, root, cg string) []string {
	rel := cg
	if root != "/" && root != "" {
		if r, ok := strings.CutPrefix(cg, root); ok && (r == "" || strings.HasPrefix(r, "/")) {
			rel = r
		} else {
			rel = "/"
		}
	}
	rel = filepath.Clean("/" + rel)
	if strings.Contains(rel, "..") {
		rel = "/"
	}
	var dirs []string
	for {
		dirs = append(dirs, filepath.Join(mountPoint, rel))
		if rel == "/" {
			return dirs
		}
		rel = filepath.Dir(rel)
	}
}

// readLimit reads a cgroup limit file: a byte count or "max". ok is false
// when the file does not exist or says "max".
func readLimit(path string) (v uint64, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("daemon: memory: %w", err)
	}
	text := strings.TrimSpace(string(data))
	if text == "max" {
		return 0, false, nil
	}
	v, err = strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("daemon: memory: %s: not a byte count: %q", path, text)
	}
	return v, true, nil
}

// MemoryUsed returns this process's resident set size (VmRSS), which
// includes the pages of the memory-mapped model that are in memory.
func (s System) MemoryUsed() (uint64, error) {
	path := s.proc("self/status")
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("daemon: memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			break
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			break
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("daemon: memory: %s: %w", path, err)
	}
	return 0, fmt.Errorf("daemon: memory: %s: no VmRSS line in kB", path)
}

// PlanInput is what Plan needs to know.
type PlanInput struct {
	// Budget is the memory budget in bytes (MemoryBudget.Limit).
	Budget uint64
	// ModelBytes is the memory the model's weights take: the size of the
	// model file, which is memory-mapped, and with model.repack the heap its
	// copies take in place of their part of the file.
	ModelBytes uint64
	// RepackBytes is the part of ModelBytes that model.repack copies to the
	// heap (their pages of the file are let go): memory that cannot page
	// from disk, so it must fit beside the KV cache.
	RepackBytes uint64
	// Context is the configured context length in tokens (of each slot).
	Context int
	// KVBytesPerToken and KVBytesFixed give the layers' caches of one slot
	// at the context: Context × KVBytesPerToken + KVBytesFixed
	// (ModelInfo.CacheBytes).
	KVBytesPerToken, KVBytesFixed uint64
	// Overhead is the fixed memory besides model and KV cache: the Go
	// runtime, activations, scratch buffers, the MQTT client.
	Overhead uint64
	// Slots is how many jobs run at once (queue.slots), each with its own
	// caches; 0 picks the most that fit, at most MaxAutoSlots (AutoSlots).
	Slots int
	// SlotBytes is what each slot beyond the first needs besides its
	// caches: its logits (ModelInfo.StateBytes; the workspace the slots
	// share, and the first slot's, are in Overhead).
	SlotBytes uint64
	// MaxAutoSlots caps the slots picked when Slots is 0 (AutoSlots gives
	// it for the machine); 0 means 1.
	MaxAutoSlots int
}

// MemoryPlan is how the daemon will use its memory budget.
type MemoryPlan struct {
	// Budget, Overhead and ModelBytes restate the inputs; KVBytes is the
	// caches of every slot, Slots × (Context × KVBytesPerToken +
	// KVBytesFixed), and SlotBytes the further slots' buffers,
	// (Slots−1) × SlotBytes.
	Budget, KVBytes, Overhead, ModelBytes, SlotBytes uint64
	// Slots is how many jobs run at once: the configured number, or the
	// one picked for 0.
	Slots int
	// MaxSlots is the most slots whose caches fit the budget at the
	// context (the model paging from disk if it must).
	MaxSlots int
	// HeapLimit is the soft limit for debug.SetMemoryLimit: the budget minus
	// the model's pages when the model fits, otherwise just the KV cache and
	// overhead (the model then shares what is left as page cache).
	HeapLimit int64
	// ModelResident is true when the model file fits beside the KV cache and
	// overhead, so it stays in memory once read.
	ModelResident bool
	// Warning is set when the model does not fit and will page from disk.
	Warning string
	// MaxContext is the largest context whose KV caches (one per slot) fit
	// the budget.
	MaxContext int
}

// MiB is a mebibyte.
const MiB = 1 << 20

// GiB is a gibibyte.
const GiB = 1 << 30

// MaxSlots is the largest queue.slots: the most sequences the inference
// batcher runs.
const MaxSlots = inference.MaxSlots

// AutoSlots is the most slots queue.slots 0 picks on a machine with cpus
// CPUs available and total bytes of RAM (0: unknown, then budget stands in
// for it): 4 on a Pi-class board (4 CPUs or fewer, or 8 GiB or less), else
// 8.
func AutoSlots(cpus int, total, budget uint64) int {
	if total == 0 {
		total = budget
	}
	if cpus <= 4 || total <= 8*GiB {
		return 4
	}
	return 8
}

// Plan divides the budget between the slots' KV caches, the fixed overhead
// and the memory-mapped model. The KV caches and overhead must fit (an error
// says by how much they do not, and which context or how many slots would);
// the model may not fit, in which case it pages from disk and the plan
// carries a warning. With Slots 0 it picks the most slots, up to
// MaxAutoSlots, that leave the model resident, and at least one.
func Plan(in PlanInput) (MemoryPlan, error) {
	if in.Budget == 0 {
		return MemoryPlan{}, errors.New("daemon: memory: the memory budget is 0")
	}
	if in.Context <= 0 || in.KVBytesPerToken == 0 && in.KVBytesFixed == 0 {
		return MemoryPlan{}, fmt.Errorf("daemon: memory: need a positive context and KV size, got %d and %d per token + %d", in.Context, in.KVBytesPerToken, in.KVBytesFixed)
	}
	if in.Slots < 0 {
		return MemoryPlan{}, fmt.Errorf("daemon: memory: %d slots", in.Slots)
	}
	slotKV := uint64(in.Context)*in.KVBytesPerToken + in.KVBytesFixed
	p := MemoryPlan{
		Budget:     in.Budget,
		Overhead:   in.Overhead,
		ModelBytes: in.ModelBytes,
	}
	if in.Overhead >= in.Budget {
		return p, fmt.Errorf("daemon: memory: the fixed overhead of %s leaves nothing of the %s budget for the KV cache",
			formatMiB(in.Overhead), formatMiB(in.Budget))
	}
	left := in.Budget - in.Overhead
	// fixed says what the budget leaves room beside, for the errors.
	fixed := formatMiB(in.Overhead) + " overhead"
	if in.RepackBytes > 0 {
		if in.RepackBytes >= left {
			return p, fmt.Errorf("daemon: memory: model.repack copies %s of weights to the heap, and the budget leaves %s (budget %s minus %s); "+
				"turn model.repack off or raise the memory limit", formatMiB(in.RepackBytes), formatMiB(left), formatMiB(in.Budget), fixed)
		}
		left -= in.RepackBytes // heap that is neither KV cache nor buffers, like the overhead
		fixed += " and " + formatMiB(in.RepackBytes) + " of weights model.repack copies"
	}
	// mapped is what the model keeps in the file's pages.
	mapped := in.ModelBytes - min(in.RepackBytes, in.ModelBytes)
	// need is the memory of n slots beside the overhead.
	need := func(n int) uint64 { return uint64(n)*slotKV + uint64(max(n-1, 0))*in.SlotBytes }
	// fits counts the slots (up to limit) whose memory is at most room.
	fits := func(room uint64, limit int) int {
		n := 0
		for n < limit && need(n+1) <= room {
			n++
		}
		return n
	}
	p.MaxSlots = fits(left, MaxSlots)
	p.Slots = in.Slots
	if p.Slots == 0 {
		auto := max(in.MaxAutoSlots, 1)
		p.Slots = 1
		if left > mapped {
			p.Slots = max(fits(left-mapped, auto), 1)
		}
	}
	p.KVBytes = uint64(p.Slots) * slotKV
	p.SlotBytes = uint64(p.Slots-1) * in.SlotBytes
	perSlot := left / uint64(p.Slots)
	if p.SlotBytes <= left {
		perSlot = (left - p.SlotBytes) / uint64(p.Slots)
	}
	switch {
	case p.SlotBytes > left || perSlot < in.KVBytesFixed:
	case in.KVBytesPerToken == 0: // only rings and convolution states: any context
		p.MaxContext = math.MaxInt32
	default:
		p.MaxContext = int(min((perSlot-in.KVBytesFixed)/in.KVBytesPerToken, math.MaxInt32))
	}
	if used := p.KVBytes + p.SlotBytes; used > left {
		if p.Slots > 1 && p.MaxSlots >= 1 {
			return p, fmt.Errorf("daemon: memory: queue.slots %d at context %d needs %s of KV cache and buffers, budget leaves %s (budget %s minus %s); "+
				"slots that fit at this context: %d; context that fits %d slots: %d; lower queue.slots (0: as many as fit) or model.context, or raise the memory limit",
				p.Slots, in.Context, formatMiB(used), formatMiB(left), formatMiB(in.Budget), fixed, p.MaxSlots, p.Slots, p.MaxContext)
		}
		return p, fmt.Errorf("daemon: memory: context %d needs %s of KV cache, budget leaves %s (budget %s minus %s); "+
			"the largest context that fits is %d: lower model.context or raise the memory limit",
			in.Context, formatMiB(used), formatMiB(left), formatMiB(in.Budget), fixed, p.MaxContext)
	}
	rest := left - p.KVBytes - p.SlotBytes
	p.ModelResident = mapped <= rest
	if p.ModelResident {
		p.HeapLimit = clampInt64(in.Budget - mapped)
	} else {
		p.HeapLimit = clampInt64(p.KVBytes + p.SlotBytes + in.Overhead + in.RepackBytes)
		what := "the model file"
		if in.RepackBytes > 0 {
			what = "the part of the model file model.repack does not copy"
		}
		p.Warning = fmt.Sprintf("%s (%s) is larger than the %s the budget leaves beside the KV cache and overhead; "+
			"it will page from disk and generation will be slow", what, formatMiB(mapped), formatMiB(rest))
	}
	return p, nil
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// formatMiB formats a byte count in MiB: "88 MiB", or "87.5 MiB" (rounded
// down to a tenth) when not whole.
func formatMiB(b uint64) string {
	if b%MiB == 0 {
		return fmt.Sprintf("%d MiB", b/MiB)
	}
	return fmt.Sprintf("%.1f MiB", math.Floor(float64(b)/MiB*10)/10)
}
