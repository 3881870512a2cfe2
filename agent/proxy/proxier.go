package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/knftables"
)

// sliceIndex indexes EndpointSlices by their Service (namespace/name).
const sliceIndex = "k1s-proxy-service"

// staleChainDelay is how long a chain stays, flushed, after nothing
// refers to it any more before it is deleted: kernels before 6.2 notice
// only a moment later that a map element no longer refers to it.
const staleChainDelay = time.Second

// Deps are the proxy's handles.
type Deps struct {
	// Services and EndpointSlices are informers of a shared factory the
	// caller starts after New.
	Services       cache.SharedIndexInformer
	EndpointSlices cache.SharedIndexInformer
	// NFTables makes the table handle of a family; nil: the nft command
	// (knftables.New).
	NFTables func(family knftables.Family, table string) (knftables.Interface, error)
	// Conntrack clears UDP flows to endpoints that went away; nil: netlink.
	Conntrack Conntrack
	// Sysctl sets the kernel settings the proxy needs; nil: /proc/sys.
	Sysctl func(name, value string) error
	Clock  clock.WithTicker
}

// Proxy programs the node's nftables from Services and EndpointSlices, as
// kube-proxy's nftables mode. Run it once; safe for concurrent use.
type Proxy struct {
	cfg       Config
	services  cache.SharedIndexInformer
	slices    cache.SharedIndexInformer
	families  []*familyProxy
	conntrack Conntrack
	sysctl    func(name, value string) error
	clock     clock.WithTicker
	health    *healthServer
	metrics   *proxyMetrics

	mu       sync.Mutex
	dirty    sets.Set[types.NamespacedName]
	changed  map[types.NamespacedName]time.Time // first unsynced change
	wake     chan struct{}
	ready    chan struct{}
	lastSync time.Time
	checks   int // consistency checks judged; tests wait on it
}

// familyProxy is one IP family's table and what the proxy wrote into it.
type familyProxy struct {
	rules    *familyRules
	nft      knftables.Interface
	written  map[types.NamespacedName]*serviceRules
	elements map[string]*elementState // element.id() → state
	stale    map[string]time.Time     // chains flushed and awaiting deletion
	needFull bool
	sampleAt int // where the next consistency check's rule sample starts
	// sinceCheck notes what is written while a consistency check runs;
	// nil when none does.
	sinceCheck *changeLog
}

type elementState struct {
	el   element
	refs sets.Set[types.NamespacedName]
}

// New validates cfg and registers the proxy's event handlers and index on
// the informers; it starts nothing.
func New(cfg Config, deps Deps) (*Proxy, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Services == nil || deps.EndpointSlices == nil {
		return nil, errors.New("service proxy: informers are required")
	}
	if deps.NFTables == nil {
		deps.NFTables = func(family knftables.Family, table string) (knftables.Interface, error) {
			return knftables.New(family, table)
		}
	}
	if deps.Conntrack == nil {
		deps.Conntrack = netlinkConntrack{}
	}
	if deps.Sysctl == nil {
		deps.Sysctl = writeSysctl
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	p := &Proxy{
		cfg:       cfg,
		services:  deps.Services,
		slices:    deps.EndpointSlices,
		conntrack: deps.Conntrack,
		sysctl:    deps.Sysctl,
		clock:     deps.Clock,
		dirty:     sets.New[types.NamespacedName](),
		changed:   map[types.NamespacedName]time.Time{},
		wake:      make(chan struct{}, 1),
		ready:     make(chan struct{}),
		metrics:   newMetrics(),
	}
	var families []corev1.IPFamily
	for _, c := range cfg.ServiceCIDRs {
		if f := familyOf(c.IP); !slices.Contains(families, f) {
			families = append(families, f)
		}
	}
	for _, f := range families {
		nfFamily := knftables.IPv4Family
		if f == corev1.IPv6Protocol {
			nfFamily = knftables.IPv6Family
		}
		nft, err := deps.NFTables(nfFamily, cfg.Table)
		if err != nil {
			return nil, fmt.Errorf("service proxy needs nftables (the nft command, 1.0.1 or later, and a kernel with nf_tables): %w", err)
		}
		p.families = append(p.families, &familyProxy{
			rules:    newFamilyRules(f, &cfg),
			nft:      nft,
			written:  map[types.NamespacedName]*serviceRules{},
			elements: map[string]*elementState{},
			stale:    map[string]time.Time{},
			needFull: true,
		})
	}
	if err := deps.EndpointSlices.AddIndexers(cache.Indexers{sliceIndex: func(obj any) ([]string, error) {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || s.Labels[discoveryv1.LabelServiceName] == "" {
			return nil, nil
		}
		return []string{s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]}, nil
	}}); err != nil {
		return nil, fmt.Errorf("service proxy: index endpoint slices: %w", err)
	}
	serviceKey := func(obj any) (types.NamespacedName, bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		switch o := obj.(type) {
		case *corev1.Service:
			return types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, true
		case *discoveryv1.EndpointSlice:
			if name := o.Labels[discoveryv1.LabelServiceName]; name != "" {
				return types.NamespacedName{Namespace: o.Namespace, Name: name}, true
			}
		}
		return types.NamespacedName{}, false
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if key, ok := serviceKey(obj); ok {
				p.markDirty(key)
			}
		},
		UpdateFunc: func(old, obj any) {
			if key, ok := serviceKey(obj); ok {
				p.markDirty(key)
			}
		},
		DeleteFunc: func(obj any) {
			if key, ok := serviceKey(obj); ok {
				p.markDirty(key)
			}
		},
	}
	if _, err := deps.Services.AddEventHandler(handler); err != nil {
		return nil, fmt.Errorf("service proxy: watch services: %w", err)
	}
	if _, err := deps.EndpointSlices.AddEventHandler(handler); err != nil {
		return nil, fmt.Errorf("service proxy: watch endpoint slices: %w", err)
	}
	return p, nil
}

// Ready is closed once the first full rule set is in the kernel.
func (p *Proxy) Ready() <-chan struct{} { return p.ready }

func (p *Proxy) markDirty(key types.NamespacedName) {
	p.mu.Lock()
	p.dirty.Insert(key)
	if _, ok := p.changed[key]; !ok {
		p.changed[key] = p.clock.Now()
	}
	p.mu.Unlock()
	p.poke()
}

func (p *Proxy) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run waits for the informers to sync, writes the whole rule set, then
// keeps it up to date until ctx is cancelled. The rules stay in the
// kernel when it returns: traffic keeps flowing while k1s restarts.
func (p *Proxy) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("proxy")
	ctx = klog.NewContext(ctx, logger)
	for _, s := range []struct{ name, value string }{
		// Replies between pods on one bridge must pass the NAT of the
		// connection they answer.
		{"net/bridge/bridge-nf-call-iptables", "1"},
		{"net/bridge/bridge-nf-call-ip6tables", "1"},
		{"net/ipv4/ip_forward", "1"},
	} {
		if err := p.sysctl(s.name, s.value); err != nil {
			logger.Error(err, "Could not set a kernel setting the service proxy needs", "sysctl", s.name)
		}
	}
	health, err := newHealthServer(p.cfg, p)
	if err != nil {
		return err
	}
	p.health = health
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		health.run(ctx)
	}()

	if !cache.WaitForCacheSync(ctx.Done(), p.services.HasSynced, p.slices.HasSynced) {
		return nil
	}
	check := p.clock.NewTicker(p.cfg.SyncPeriod)
	defer check.Stop()
	// One consistency check at a time lists the kernel's tables beside
	// this loop, so that no change waits for it; what it found comes back
	// on checked.
	checked := make(chan []tableDiff, 1)
	checking := false
	var retry <-chan time.Time
	var last time.Time
	for {
		if wait := p.cfg.MinSyncPeriod - p.clock.Since(last); wait > 0 && !last.IsZero() {
			select {
			case <-ctx.Done():
				return nil
			case <-p.clock.After(wait):
			}
		}
		last = p.clock.Now()
		if err := p.syncOnce(ctx); err != nil {
			logger.Error(err, "Service proxy rules not written; retrying")
			retry = p.clock.After(time.Second)
		} else {
			retry = nil
			select {
			case <-p.ready:
			default:
				close(p.ready)
			}
		}
		var staleAt <-chan time.Time
		if next := p.nextStale(); !next.IsZero() {
			staleAt = p.clock.After(next.Sub(p.clock.Now()))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-retry:
		case <-staleAt:
		case <-check.C():
			if !checking {
				checking = p.startCheck(ctx, &wg, checked)
			}
		case diffs := <-checked:
			checking = false
			p.judge(ctx, diffs)
		}
	}
}

// syncOnce writes what changed since the last sync (everything, for a
// family that needs a full sync).
func (p *Proxy) syncOnce(ctx context.Context) error {
	p.mu.Lock()
	dirty := p.dirty
	changed := p.changed
	p.dirty = sets.New[types.NamespacedName]()
	p.changed = map[types.NamespacedName]time.Time{}
	p.mu.Unlock()

	start := p.clock.Now()
	var errs []error
	var udp []udpFrontend
	anyFull := false
	for _, f := range p.families {
		full := f.needFull
		anyFull = anyFull || full
		u, err := f.sync(ctx, p, dirty, full, start)
		if err != nil {
			f.needFull = true
			p.metrics.syncFailures.Inc()
			errs = append(errs, fmt.Errorf("%s table: %w", f.rules.family, err))
			continue
		}
		f.needFull = false
		udp = append(udp, u...)
	}
	elapsed := p.clock.Since(start)
	p.metrics.syncDuration.Observe(elapsed.Seconds())
	if len(errs) > 0 {
		// What was not written is written whole next time.
		return errors.Join(errs...)
	}
	now := p.clock.Now()
	for _, t := range changed {
		p.metrics.programmingLatency.Observe(now.Sub(t).Seconds())
	}
	p.mu.Lock()
	p.lastSync = now
	p.mu.Unlock()
	p.metrics.lastSync.Set(float64(now.Unix()))
	if anyFull || len(dirty) > 0 {
		klog.FromContext(ctx).V(2).Info("Service proxy rules written", "services", len(dirty), "full", anyFull, "elapsed", elapsed)
	}
	if len(udp) > 0 {
		if err := p.conntrack.ClearStale(udp); err != nil {
			klog.FromContext(ctx).Error(err, "Could not clear stale UDP conntrack entries")
		}
	}
	if p.health != nil {
		p.health.update(p.healthChecks())
	}
	return nil
}

// lookup reads a Service and its EndpointSlices from the informers.
func (p *Proxy) lookup(key types.NamespacedName) (*corev1.Service, []*discoveryv1.EndpointSlice) {
	obj, ok, err := p.services.GetIndexer().GetByKey(key.String())
	if err != nil || !ok {
		return nil, nil
	}
	svc := obj.(*corev1.Service)
	objs, _ := p.slices.GetIndexer().ByIndex(sliceIndex, key.String())
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*discoveryv1.EndpointSlice))
	}
	// A stable order, so equal input writes equal rules.
	slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	return svc, out
}

func (p *Proxy) exempt(svc *corev1.Service) bool {
	for _, ip := range p.cfg.ExemptIPs {
		for _, s := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
			if s == ip.String() {
				return true
			}
		}
	}
	return false
}

// build computes one Service's rules for a family; nil when the proxy does
// not handle it.
func (p *Proxy) build(f *familyProxy, key types.NamespacedName) *serviceRules {
	svc, slices := p.lookup(key)
	if svc == nil || p.exempt(svc) {
		return nil
	}
	ports := servicePorts(svc, f.rules.family)
	if len(ports) == 0 {
		return nil
	}
	eps := make([][]endpoint, len(ports))
	for i, sp := range ports {
		eps[i] = endpointsFor(sp, slices, p.cfg.NodeName)
	}
	return f.rules.service(ports, eps)
}

// sync writes a family's table: whole when full, else only the dirty
// Services. It returns the UDP frontends of the Services it wrote.
func (f *familyProxy) sync(ctx context.Context, p *Proxy, dirty sets.Set[types.NamespacedName], full bool, now time.Time) ([]udpFrontend, error) {
	if full {
		return f.fullSync(ctx, p)
	}
	if err := f.deleteStale(ctx, now); err != nil {
		return nil, err
	}
	if dirty.Len() == 0 {
		return nil, nil
	}
	// The bookkeeping is updated as the operations are planned: when the
	// transaction fails, the family is written whole next time, which
	// rebuilds it from nothing.
	tx := f.nft.NewTransaction()
	ops := &txOps{}
	var udp []udpFrontend
	stale := map[string]time.Time{}
	for key := range dirty {
		cur := p.build(f, key)
		f.diff(ops, f.elements, stale, key, f.written[key], cur, now)
		if cur == nil {
			delete(f.written, key)
		} else {
			f.written[key] = cur
			udp = append(udp, cur.udp...)
		}
	}
	ops.apply(tx)
	f.sinceCheck.add(ops)
	for chain := range ops.liveChains {
		delete(f.stale, chain)
	}
	for chain, t := range stale {
		f.stale[chain] = t
	}
	if tx.NumOperations() > 0 {
		if err := f.nft.Run(ctx, tx); err != nil {
			return nil, fmt.Errorf("write rules: %w", err)
		}
	}
	return udp, nil
}

// txOps collects a partial sync's operations and applies them in an
// order the kernel accepts: chains emptied before sets they use are
// deleted, sets made before rules use them, rules before elements that
// jump to their chains, element deletions before re-additions.
type txOps struct {
	chains      []*knftables.Chain // add + flush
	flushChains []*knftables.Chain // flush only (stale)
	delSets     []*knftables.Set
	addSets     []*knftables.Set
	rules       []*knftables.Rule
	delElements []*knftables.Element
	addElements []*knftables.Element
	liveChains  map[string]bool
}

func (o *txOps) apply(tx *knftables.Transaction) {
	for _, c := range o.chains {
		tx.Add(c)
		tx.Flush(c)
	}
	for _, c := range o.flushChains {
		tx.Flush(c)
	}
	for _, s := range o.delSets {
		tx.Delete(s)
	}
	for _, s := range o.addSets {
		tx.Add(s)
	}
	for _, r := range o.rules {
		tx.Add(r)
	}
	for _, e := range o.delElements {
		tx.Delete(e)
	}
	for _, e := range o.addElements {
		tx.Add(e)
	}
}

// diff adds to ops what turns a Service's old rules into cur.
func (f *familyProxy) diff(ops *txOps, elements map[string]*elementState, stale map[string]time.Time, key types.NamespacedName, old, cur *serviceRules, now time.Time) {
	if ops.liveChains == nil {
		ops.liveChains = map[string]bool{}
	}
	var oldChains map[string][]string
	var oldSets []affinitySet
	var oldElements []element
	if old != nil {
		oldChains, oldSets, oldElements = old.chains, old.sets, old.elements
	}
	var curChains map[string][]string
	var curSets []affinitySet
	var curElements []element
	if cur != nil {
		curChains, curSets, curElements = cur.chains, cur.sets, cur.elements
	}
	// Sets: a set whose timeout changed is made anew; its chains are
	// rewritten in the same transaction.
	oldSet := map[string]time.Duration{}
	for _, s := range oldSets {
		oldSet[s.name] = s.timeout
	}
	curSet := map[string]time.Duration{}
	for _, s := range curSets {
		curSet[s.name] = s.timeout
		if t, ok := oldSet[s.name]; !ok || t != s.timeout {
			if ok {
				ops.delSets = append(ops.delSets, &knftables.Set{Name: s.name})
			}
			ops.addSets = append(ops.addSets, f.affinitySetObject(s))
		}
	}
	for _, s := range oldSets {
		if _, ok := curSet[s.name]; !ok {
			ops.delSets = append(ops.delSets, &knftables.Set{Name: s.name})
		}
	}
	setChanged := func(rules []string) bool {
		for _, r := range rules {
			for name, t := range oldSet {
				if strings.Contains(r, "@"+name+" ") && curSet[name] != t {
					return true
				}
			}
		}
		return false
	}
	for _, name := range sortedKeys(curChains) {
		rules := curChains[name]
		ops.liveChains[name] = true
		if prev, ok := oldChains[name]; ok && slices.Equal(prev, rules) && !setChanged(rules) {
			continue
		}
		ops.chains = append(ops.chains, &knftables.Chain{Name: name})
		for _, r := range rules {
			ops.rules = append(ops.rules, &knftables.Rule{Chain: name, Rule: r})
		}
	}
	for _, name := range sortedKeys(oldChains) {
		if _, ok := curChains[name]; !ok {
			ops.flushChains = append(ops.flushChains, &knftables.Chain{Name: name})
			stale[name] = now
		}
	}
	// Elements, shared between Services by reference count.
	curIDs := map[string]element{}
	for _, e := range curElements {
		curIDs[e.id()] = e
	}
	for _, e := range oldElements {
		id := e.id()
		if _, ok := curIDs[id]; ok {
			continue
		}
		st := elements[id]
		if st == nil {
			continue
		}
		st.refs.Delete(key)
		if st.refs.Len() == 0 {
			ops.delElements = append(ops.delElements, st.el.object())
			delete(elements, id)
		}
	}
	for _, e := range curElements {
		id := e.id()
		st := elements[id]
		switch {
		case st == nil:
			elements[id] = &elementState{el: e, refs: sets.New(key)}
			ops.addElements = append(ops.addElements, e.object())
		case st.el.value != e.value && (st.refs.Len() == 0 || (st.refs.Len() == 1 && st.refs.Has(key))):
			// This Service's own element with a new verdict.
			ops.delElements = append(ops.delElements, st.el.object())
			ops.addElements = append(ops.addElements, e.object())
			st.el = e
			st.refs.Insert(key)
		default:
			// Equal, or another Service's element for the same key
			// (two Services claiming one external IP and port): the first keeps it.
			st.refs.Insert(key)
		}
	}
}

func (f *familyProxy) affinitySetObject(s affinitySet) *knftables.Set {
	return &knftables.Set{
		Name:    s.name,
		Type:    f.rules.addrType,
		Flags:   []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag},
		Timeout: knftables.PtrTo(s.timeout),
	}
}

// fullSync empties the table and writes everything in one transaction:
// the kernel swaps the old rule set for the new at once, so packets never
// see a half-written table and established connections keep their NAT.
func (f *familyProxy) fullSync(ctx context.Context, p *Proxy) ([]udpFrontend, error) {
	tx := f.nft.NewTransaction()
	table := &knftables.Table{Comment: knftables.PtrTo("rules for k1s's service proxy")}
	tx.Add(table)
	tx.Delete(table)
	tx.Add(table)
	f.rules.base(tx)
	written := map[types.NamespacedName]*serviceRules{}
	elements := map[string]*elementState{}
	ops := &txOps{}
	var udp []udpFrontend
	keys := p.services.GetIndexer().ListKeys()
	slices.Sort(keys)
	for _, k := range keys {
		ns, name, _ := cache.SplitMetaNamespaceKey(k)
		key := types.NamespacedName{Namespace: ns, Name: name}
		cur := p.build(f, key)
		if cur == nil {
			continue
		}
		f.diff(ops, elements, map[string]time.Time{}, key, nil, cur, time.Time{})
		written[key] = cur
		udp = append(udp, cur.udp...)
	}
	ops.apply(tx)
	f.sinceCheck.addWhole()
	if err := f.nft.Run(ctx, tx); err != nil {
		return nil, fmt.Errorf("write the whole rule set: %w", err)
	}
	f.written, f.elements = written, elements
	f.stale = map[string]time.Time{}
	return udp, nil
}

// deleteStale deletes the chains flushed at least staleChainDelay ago.
func (f *familyProxy) deleteStale(ctx context.Context, now time.Time) error {
	tx := f.nft.NewTransaction()
	var gone []string
	for chain, t := range f.stale {
		if now.Sub(t) >= staleChainDelay {
			tx.Delete(&knftables.Chain{Name: chain})
			gone = append(gone, chain)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	for _, c := range gone {
		f.sinceCheck.addKey(chainKey(c))
	}
	if err := f.nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("delete %d unused chains: %w", len(gone), err)
	}
	for _, c := range gone {
		delete(f.stale, c)
	}
	return nil
}

func (p *Proxy) nextStale() time.Time {
	var next time.Time
	for _, f := range p.families {
		for _, t := range f.stale {
			if at := t.Add(staleChainDelay); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next
}

// The consistency check compares the kernel's table with what the proxy
// wrote (chains, sets, the elements of every set and map, and the rules
// of a few chains); when they differ — someone flushed the ruleset, say —
// the family is rewritten whole. Listing a table of a thousand Services
// takes a few hundred milliseconds, so the listing runs beside the sync
// loop: the loop copies what each table should hold (startCheck), a
// goroutine lists the kernel's tables and finds what differs
// (tableWant.drift), and the loop judges the differences (judge) leaving
// out the objects it wrote in between, which the listing may show before
// or after the write.

// tableWant is what a family's table should hold, copied on the sync
// loop for a check that reads it on another goroutine.
type tableWant struct {
	f        *familyProxy // for judge; the check goroutine does not read it
	nft      knftables.Interface
	rules    *familyRules
	written  map[types.NamespacedName]*serviceRules // never changed once built
	stale    sets.Set[string]
	elements []element
	sampleAt int
}

// tableDiff is how a family's table differed from what it should hold.
type tableDiff struct {
	f          *familyProxy
	mismatches []mismatch
}

// mismatch is one difference: key names the object as changeLog does
// ("" the whole table), what says it for the log.
type mismatch struct {
	key, what string
}

// changeLog notes the objects a family writes while a check runs.
// Methods on a nil log do nothing.
type changeLog struct {
	whole bool // the table was written whole: nothing the check found counts
	keys  sets.Set[string]
}

func (c *changeLog) addWhole() {
	if c != nil {
		c.whole = true
	}
}

func (c *changeLog) addKey(key string) {
	if c != nil {
		c.keys.Insert(key)
	}
}

func (c *changeLog) add(o *txOps) {
	if c == nil {
		return
	}
	for _, ch := range slices.Concat(o.chains, o.flushChains) {
		c.keys.Insert(chainKey(ch.Name))
	}
	for _, s := range slices.Concat(o.delSets, o.addSets) {
		c.keys.Insert(setKey(s.Name))
	}
	for _, e := range slices.Concat(o.delElements, o.addElements) {
		// As element.id: exactly one of Set and Map is set.
		c.keys.Insert(e.Set + e.Map + "|" + strings.Join(e.Key, " . "))
	}
}

func chainKey(name string) string { return "chain " + name }
func setKey(name string) string   { return "set " + name }

// startCheck starts a consistency check of the families not awaiting a
// whole write: it copies what their tables should hold and starts one
// goroutine that lists the kernel's tables and sends what differs to
// done. From now until judge, each family notes what it writes. It
// reports whether it started a check.
func (p *Proxy) startCheck(ctx context.Context, wg *sync.WaitGroup, done chan<- []tableDiff) bool {
	var wants []*tableWant
	for _, f := range p.families {
		if f.needFull {
			continue
		}
		w := &tableWant{
			f:        f,
			nft:      f.nft,
			rules:    f.rules,
			written:  maps.Clone(f.written),
			stale:    sets.KeySet(f.stale),
			elements: make([]element, 0, len(f.elements)),
			sampleAt: f.sampleAt,
		}
		for _, st := range f.elements {
			w.elements = append(w.elements, st.el)
		}
		if n := len(f.written); n > 0 {
			f.sampleAt = (f.sampleAt + ruleSamplesPerCheck) % n
		}
		f.sinceCheck = &changeLog{keys: sets.New[string]()}
		wants = append(wants, w)
	}
	if len(wants) == 0 {
		return false
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		diffs := make([]tableDiff, len(wants))
		for i, w := range wants {
			diffs[i] = tableDiff{f: w.f, mismatches: w.drift(ctx)}
		}
		done <- diffs
	}()
	return true
}

// judge acts on a check's findings: a family whose table differs, in
// objects not written since the check started, is rewritten whole.
func (p *Proxy) judge(ctx context.Context, diffs []tableDiff) {
	logger := klog.FromContext(ctx)
	for _, d := range diffs {
		f, since := d.f, d.f.sinceCheck
		f.sinceCheck = nil
		if f.needFull || since.whole {
			continue
		}
		var found []mismatch
		for _, m := range d.mismatches {
			if !since.keys.Has(m.key) {
				found = append(found, m)
			}
		}
		if len(found) == 0 {
			continue
		}
		reason := found[0].what
		if len(found) > 1 {
			reason += fmt.Sprintf(" (and %d more differences)", len(found)-1)
		}
		logger.Info("Service proxy rules differ from the kernel's; rewriting them", "family", f.rules.family, "reason", reason)
		p.metrics.drift.Inc()
		f.needFull = true
		p.poke()
	}
	p.mu.Lock()
	p.checks++
	p.mu.Unlock()
}

// drift lists the kernel's table and returns every way it differs from w.
func (w *tableWant) drift(ctx context.Context) []mismatch {
	all, err := w.nft.ListAll(ctx)
	if err != nil {
		if knftables.IsNotFound(err) {
			return []mismatch{{what: "table missing"}}
		}
		return []mismatch{{what: "list table: " + err.Error()}}
	}
	wantChains := sets.New[string]()
	for _, bc := range baseChains {
		wantChains.Insert(bc.name)
	}
	wantChains.Insert(chainServices, chainServiceEndpoints, chainNodePortEndpoints, chainClusterIPsCheck, chainFirewallCheck, chainMasquerading, chainReject)
	wantSets := sets.New(setClusterIPs, setNodePortIPs, setHairpin)
	for _, sr := range w.written {
		for c := range sr.chains {
			wantChains.Insert(c)
		}
		for _, s := range sr.sets {
			wantSets.Insert(s.name)
		}
	}
	haveChains := sets.New(all["chain"]...).Difference(w.stale)
	out := appendDiff(nil, wantChains, haveChains, "chain ", chainKey)
	out = appendDiff(out, wantSets, sets.New(all["set"]...), "set ", setKey)
	out = append(out, w.ruleDrift(ctx)...)
	want := map[string]sets.Set[string]{}
	for _, el := range w.elements {
		if want[el.container] == nil {
			want[el.container] = sets.New[string]()
		}
		want[el.container].Insert(strings.Join(el.key, " . "))
	}
	for _, c := range []struct {
		typ, name string
	}{{"set", setClusterIPs}, {"set", setHairpin}, {"map", mapServiceIPs}, {"map", mapServiceNodePorts}, {"map", mapNoEndpointServices}, {"map", mapNoEndpointNodePorts}, {"map", mapFirewallIPs}} {
		els, err := w.nft.ListElements(ctx, c.typ, c.name)
		if err != nil {
			out = append(out, mismatch{key: setKey(c.name), what: c.name + ": " + err.Error()})
			continue
		}
		have := sets.New[string]()
		for _, e := range els {
			have.Insert(strings.Join(e.Key, " . "))
		}
		out = appendDiff(out, want[c.name], have, c.name+" element ", func(k string) string { return c.name + "|" + k })
	}
	return out
}

// appendDiff appends a mismatch for each name missing from have or
// unexpected in it.
func appendDiff(out []mismatch, want, have sets.Set[string], noun string, key func(string) string) []mismatch {
	for _, n := range sets.List(want.Difference(have)) {
		out = append(out, mismatch{key: key(n), what: noun + n + " missing"})
	}
	for _, n := range sets.List(have.Difference(want)) {
		out = append(out, mismatch{key: key(n), what: noun + n + " unexpected"})
	}
	return out
}

// ruleDrift compares the number of rules in a few chains with what was
// written: three fixed chains (a flushed table shows there) and, in turn,
// a few Services' chains each time, so that every chain is looked at
// over time without listing thousands of them at once.
func (w *tableWant) ruleDrift(ctx context.Context) []mismatch {
	want := map[string]int{chainNATPrerouting: 1, chainMasquerading: 2, chainServices: 2}
	if w.rules.clusterCIDR != "" {
		want[chainServices] = 3
	}
	keys := slices.SortedFunc(maps.Keys(w.written), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for i := 0; i < len(keys) && i < ruleSamplesPerCheck; i++ {
		key := keys[(w.sampleAt+i)%len(keys)]
		for c, rules := range w.written[key].chains {
			want[c] = len(rules)
		}
	}
	var out []mismatch
	for _, c := range sortedKeys(want) {
		rules, err := w.nft.ListRules(ctx, c)
		if err != nil {
			out = append(out, mismatch{key: chainKey(c), what: "list rules of " + c + ": " + err.Error()})
			continue
		}
		if len(rules) != want[c] {
			out = append(out, mismatch{key: chainKey(c), what: fmt.Sprintf("chain %s has %d rules, want %d", c, len(rules), want[c])})
		}
	}
	return out
}

// ruleSamplesPerCheck is how many Services' chains each check counts.
const ruleSamplesPerCheck = 4

// healthChecks gathers the health-check node ports of the Services written.
func (p *Proxy) healthChecks() map[int32]healthCheck {
	out := map[int32]healthCheck{}
	for _, f := range p.families {
		for key, w := range f.written {
			for port, n := range w.healthChecks {
				hc := out[port]
				hc.service = key
				hc.localEndpoints += n
				out[port] = hc
			}
		}
	}
	return out
}

// Healthy reports whether the proxy's last write succeeded and is recent.
func (p *Proxy) lastSynced() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pending := p.dirty.Len() > 0
	for _, f := range p.families {
		pending = pending || f.needFull
	}
	return p.lastSync, !pending
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
