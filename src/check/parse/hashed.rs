//! [`HashedTests`]: the test store of a parse that lists only failing tests
//! ([`Listing::Failing`], what `loopexec parse --summary` asks for), or lists the
//! others compactly ([`Listing::Compact`], `parse`'s default shape: every attempt's id
//! is also appended to a [`ListedTests`], and [`HashedTests::finish`] gives each
//! test's first attempt its final outcome there).
//!
//! A test is known by the 64-bit hash of its id ([`id_hash`]). Its id text is kept
//! only once an attempt of it fails or passes on a retry (`named`: id, outcome, first
//! position, message — what the failing set prints); every other test is a 16-byte
//! record (hash, position, outcome) and recording it allocates nothing.
//!
//! Two ways to hold those records:
//! * **log** (the start): each attempt is appended to one of 256 vectors chosen by the
//!   low byte of its hash. Appending touches only the vectors' ends, so a million
//!   tests cost no cache miss each; at [`HashedTests::finish`] every vector is folded
//!   on its own in a small table that stays in cache (later attempt decides, first
//!   attempt gives the position).
//! * **table**: an open-addressed table (at most 7/8 full) with one slot per test.
//!   The store moves there, once, at the first question the log cannot answer without
//!   a fold (the outcome of a test that never failed, `len`, `count`, `remove`); a
//!   parser that asks such a question per test (JUnit's repeated-name check) gets
//!   there at its first test.
//!
//! The merge rules are the caller's ([`super::util::Collector`] and
//! [`super::structured::RunBuilder`]); both rules give the new outcome when the
//! earlier one was passed or skipped, so only the outcome of a named test (failing or
//! flaky, kept exactly) is ever handed to them. Outcomes, counts, first-seen order and
//! messages are those of the full store. The one inexactness: two different ids with
//! the same 64-bit hash are one test here. When the earlier is named the clash is seen
//! and the later id gets a private key; a clash between two tests that never fail
//! cannot be seen and merges them (chance about n²/2⁶⁵ for n tests: 3·10⁻⁸ for a
//! million).

use super::util::{id_hash, IdHasher, Listing};
use crate::check::model::{Counts, ListedTests, Outcome, TestResult};
use std::collections::HashMap;

/// A record of a test that is not named: a table slot or a log entry (`first` is then
/// the attempt's position). `state` is [`EMPTY`], [`REMOVED`] or an outcome code
/// ([`code`]).
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    hash: u64,
    first: u32,
    state: u8,
}

const EMPTY: u8 = 0;
const REMOVED: u8 = 1;

fn code(o: Outcome) -> u8 {
    match o {
        Outcome::Passed => 2,
        Outcome::Failed => 3,
        Outcome::Errored => 4,
        Outcome::Skipped => 5,
        Outcome::FlakyPassed => 6,
    }
}

fn outcome_of(state: u8) -> Option<Outcome> {
    Some(match state {
        2 => Outcome::Passed,
        3 => Outcome::Failed,
        4 => Outcome::Errored,
        5 => Outcome::Skipped,
        6 => Outcome::FlakyPassed,
        _ => return None,
    })
}

/// True for the outcomes that make a test named (its text kept).
fn keeps_text(o: Outcome) -> bool {
    o.is_failing() || o == Outcome::FlakyPassed
}

/// A test whose text is kept (it failed, or passed on a retry).
#[derive(Debug)]
struct Named {
    id: String,
    outcome: Outcome,
    /// Position of its first attempt (an earlier unnamed one is found at the fold).
    first: u32,
    message: Option<String>,
}

/// How a recorded attempt treats the message already kept for its test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageRule {
    /// A failing attempt without a message keeps the earlier one
    /// ([`super::util::Collector`]).
    KeepWhenNone,
    /// Every attempt replaces the message ([`super::structured::RunBuilder`]).
    Replace,
}

/// An open-addressed table of [`Slot`]s keyed by hash (linear probing), at most 7/8
/// full (the hashes are uniform, so runs stay short).
#[derive(Debug, Default)]
struct Table {
    /// Length 0 or a power of two.
    slots: Vec<Slot>,
    /// Slots not [`EMPTY`].
    used: usize,
    /// Slots holding a test.
    live: usize,
}

impl Table {
    /// Makes room for `n` more slots.
    fn reserve(&mut self, n: usize) {
        let need = (self.used + n).saturating_mul(8) / 7 + 1;
        if need > self.slots.len() {
            self.grow(need.next_power_of_two());
        }
    }

    fn grow(&mut self, cap: usize) {
        let cap = cap.max(16);
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); cap]);
        self.used = 0;
        for s in old.into_iter().filter(|s| s.state > REMOVED) {
            let i = self.probe(s.hash);
            self.slots[i] = s;
            self.used += 1;
        }
    }

    /// The slot holding `hash` (live or removed), else the empty slot where it goes.
    fn probe(&self, hash: u64) -> usize {
        let mask = self.slots.len() - 1;
        // the top bits pick the slot, so keys taken in the order of their top bits
        // walk the table from start to end (see `PositionTable::insertion_order`);
        // the table is never full: an empty slot ends every probe
        let mut i = (hash >> (64 - self.slots.len().trailing_zeros())) as usize;
        loop {
            let s = &self.slots[i];
            if s.state == EMPTY || s.hash == hash {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// The live slot of `hash`.
    fn find(&self, hash: u64) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let i = self.probe(hash);
        (self.slots[i].state > REMOVED).then_some(i)
    }

    /// An attempt with outcome `state` at position `pos`: a test not in the table is
    /// added with `pos` as its first position, else its outcome becomes `state`.
    fn put(&mut self, hash: u64, pos: u32, state: u8) {
        if (self.used + 1) * 8 > self.slots.len() * 7 {
            self.grow(self.slots.len() * 2);
        }
        let i = self.probe(hash);
        let s = &mut self.slots[i];
        if s.state > REMOVED {
            s.state = state;
            return;
        }
        if s.state == EMPTY {
            self.used += 1;
        }
        self.live += 1;
        *s = Slot {
            hash,
            first: pos,
            state,
        };
    }

    /// Takes the live slot of `hash` out.
    fn take(&mut self, hash: u64) -> Option<Slot> {
        let i = self.find(hash)?;
        let s = self.slots[i];
        self.slots[i].state = REMOVED;
        self.live -= 1;
        Some(s)
    }

    /// Empties the table, keeping its memory.
    fn clear(&mut self) {
        self.slots.fill(Slot::default());
        self.used = 0;
        self.live = 0;
    }

    fn live_slots(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter().filter(|s| s.state > REMOVED)
    }
}

/// Positions by 64-bit hash in one open-addressed table (at most 7/8 full): the index
/// of the full store ([`super::util::IdIndex`]). A lookup reads one slot run, a cache
/// line or two, where a general hash map reads a control byte and then a bucket.
#[derive(Debug, Default)]
pub struct PositionTable(Table);

impl PositionTable {
    /// The position held for `hash`.
    #[must_use]
    pub fn get(&self, hash: u64) -> Option<usize> {
        self.0.find(hash).map(|i| self.0.slots[i].first as usize)
    }

    /// The position held for `hash`; when there is none, `pos` is stored for it (one
    /// probe) and `None` returned.
    pub fn get_or_insert(&mut self, hash: u64, pos: usize) -> Option<usize> {
        let t = &mut self.0;
        if (t.used + 1) * 8 > t.slots.len() * 7 {
            t.grow(t.slots.len() * 2);
        }
        let i = t.probe(hash);
        let s = &mut t.slots[i];
        if s.state > REMOVED {
            return Some(s.first as usize);
        }
        if s.state == EMPTY {
            t.used += 1;
        }
        t.live += 1;
        // a run never holds 2^32 tests (each is a string and a record)
        *s = Slot {
            hash,
            first: u32::try_from(pos).unwrap_or(u32::MAX),
            state: code(Outcome::Passed),
        };
        None
    }

    /// Makes room for `n` more positions.
    pub fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }

    /// The order in which to insert `hashes` so that the table is walked region by
    /// region: by their top byte, equal top bytes keeping their order; indices into
    /// `hashes`. Inserting a large batch in this order touches each part of the table
    /// while it is in cache.
    #[must_use]
    pub fn insertion_order(hashes: &[u64]) -> Vec<u32> {
        let mut start = [0usize; 257];
        for h in hashes {
            start[(h >> 56) as usize + 1] += 1;
        }
        for i in 1..257 {
            start[i] += start[i - 1];
        }
        let mut out = vec![0u32; hashes.len()];
        for (r, h) in hashes.iter().enumerate() {
            let b = (h >> 56) as usize;
            out[start[b]] = u32::try_from(r).unwrap_or(u32::MAX);
            start[b] += 1;
        }
        out
    }

    /// Forgets every position, keeping the memory.
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// Bits of a key that pick its bit in `named_bits` (2^20 bits, 128 KiB).
const NAMED_BITS: u32 = 20;

/// The word and bit of `key` in `named_bits`.
fn named_bit(key: u64) -> (usize, u64) {
    let b = (key >> (64 - NAMED_BITS)) as usize;
    (b / 64, 1 << (b % 64))
}

/// False when `key` is surely not a key of `named` (`named_bits` is
/// [`HashedTests::named_bits`]: empty while nothing is named).
fn maybe_named(named_bits: &[u64], key: u64) -> bool {
    if named_bits.is_empty() {
        return false;
    }
    let (w, bit) = named_bit(key);
    named_bits[w] & bit != 0
}

/// Most failing tests [`HashedTests::reserve_failing`] makes room for ahead (a
/// report's declared counts are the producer's word; about 17 MB of map at most).
const NAMED_RESERVE_LIMIT: usize = 1 << 18;

/// Number of log vectors (by the top byte of the hash).
const LOG_PARTS: usize = 256;

/// Tests of one run kept as 64-bit id hashes, failing and flaky ones with their text
/// (see the module doc).
#[derive(Debug)]
pub struct HashedTests {
    /// The id hash ([`id_hash`]; another only in tests, to force clashes).
    hash: fn(&str) -> u64,
    /// Unfolded attempts of unnamed tests, by the top byte of the hash; `None` once
    /// the store moved to `table`.
    log: Option<Vec<Vec<Slot>>>,
    /// Unnamed tests, once the store moved here.
    table: Table,
    /// Attempts numbered in order.
    next: u32,
    /// Tests announced by [`HashedTests::reserve`] (the table's size when it is made).
    announced: usize,
    /// Every test with a failing or flaky outcome, by key.
    named: HashMap<u64, Named, IdHasher>,
    /// One bit per [`NAMED_BITS`]-bit key prefix, set for every key in `named`: most
    /// attempts (of tests never named) are told apart here, in cache, without a map
    /// lookup.
    named_bits: Vec<u64>,
    /// Ids whose hash a different named id holds, with their private keys.
    spill: HashMap<String, u64, IdHasher>,
    /// The keys the log may hold, so that [`HashedTests::outcome`] answers in log form.
    seen: SeenFilter,
    /// Attempts appended to the log (and folded from it).
    logged: usize,
    /// In log form, the attempts of log part `p` folded so far (once scans of that
    /// part had read [`SCANS_PER_ENTRY`] times its length): its table, the later
    /// attempts still in `log[p]`. Empty until the first such fold.
    folded: Vec<Table>,
    /// In log form, the log entries of each part read by scans that answered a
    /// question without folding it (see [`SCANS_PER_ENTRY`]).
    scanned: [usize; LOG_PARTS],
    /// Under [`Listing::Compact`]: every attempt's id, in order (position = `next`
    /// when it was recorded).
    listed: Option<ListedTests>,
}

/// How many log entries per entry of a part scans may read before the part is
/// folded into its own table instead: scans cost at most this many passes over the
/// log, and a part asked about only on the filter's rare false "maybe" never gets a
/// table (256 such tables held 2 MiB of a 100k-case report's peak; `valgrind
/// --tool=massif`).
const SCANS_PER_ENTRY: usize = 8;

/// Most bits of a [`SeenFilter`] (2^24, 2 MiB).
const SEEN_MAX_BITS: usize = 1 << 24;

/// Which keys the log or `named` may hold: two bits per key (from bits 8–31 and
/// 36–59 of the key; the low byte picks the log part), 16 to 32 bits per key noted,
/// so a key never noted is told apart in cache. A false "maybe" comes about once in
/// 70 to 270 questions (`(1 - e^(-2/m))²` for `m` bits per key); the key's log part
/// then answers by a scan, or, once scans have read [`SCANS_PER_ENTRY`] times its
/// length, folded into that part's own small table, as the end would fold it.
///
/// Without it, asking whether a test was seen before (JUnit's repeated names, once
/// per test case) moved the store to its one table at the first test, and every
/// later test cost a random probe of a table larger than the cache (12% of `parse
/// --summary` of a 100k-case report, `perf record`).
#[derive(Debug, Default)]
struct SeenFilter {
    /// Length 0 or a power of two.
    bits: Vec<u64>,
    /// Keys noted since the bits were last sized.
    noted: usize,
}

/// Bits of a [`SeenFilter`] per key noted, at least (at most twice as many).
const SEEN_BITS_PER_KEY: usize = 16;

impl SeenFilter {
    /// The word and bit of each of `key`'s two bits.
    fn slots(&self, key: u64) -> [(usize, u64); 2] {
        let mask = self.bits.len() * 64 - 1;
        [key >> 8, key >> 36].map(|k| {
            let b = k as usize & mask;
            (b / 64, 1 << (b % 64))
        })
    }

    /// True once the filter was made (it then notes every key).
    fn is_on(&self) -> bool {
        !self.bits.is_empty()
    }

    /// False when `key` was surely never noted (or the filter was never made).
    fn may_hold(&self, key: u64) -> bool {
        if self.bits.is_empty() {
            return false;
        }
        self.slots(key)
            .iter()
            .all(|&(w, bit)| self.bits[w] & bit != 0)
    }

    /// Sets `key`'s bits.
    fn set(&mut self, key: u64) {
        for (w, bit) in self.slots(key) {
            self.bits[w] |= bit;
        }
        self.noted += 1;
    }

    /// Notes `key` (the filter is on). Returns true when the filter should grow
    /// (fewer than [`SEEN_BITS_PER_KEY`] bits per key, below [`SEEN_MAX_BITS`]).
    fn note(&mut self, key: u64) -> bool {
        self.set(key);
        self.noted * SEEN_BITS_PER_KEY > self.bits.len() * 64
            && self.bits.len() * 64 < SEEN_MAX_BITS
    }

    /// Sizes the filter for `n` keys ([`SEEN_BITS_PER_KEY`] bits each) and notes
    /// `keys`.
    fn rebuild(&mut self, n: usize, keys: impl Iterator<Item = u64>) {
        let bits = n
            .saturating_mul(SEEN_BITS_PER_KEY)
            .clamp(1 << 16, SEEN_MAX_BITS)
            .next_power_of_two();
        self.bits = vec![0; bits / 64];
        self.noted = 0;
        for key in keys {
            self.set(key);
        }
    }
}

impl Default for HashedTests {
    fn default() -> Self {
        Self::new()
    }
}

impl HashedTests {
    /// An empty store (in its log form).
    #[must_use]
    pub fn new() -> Self {
        HashedTests {
            hash: id_hash,
            log: Some(vec![Vec::new(); LOG_PARTS]),
            table: Table::default(),
            next: 0,
            announced: 0,
            named: HashMap::default(),
            named_bits: Vec::new(),
            spill: HashMap::default(),
            seen: SeenFilter::default(),
            logged: 0,
            folded: Vec::new(),
            scanned: [0; LOG_PARTS],
            listed: None,
        }
    }

    /// An empty store that also lists every attempt's id ([`Listing::Compact`]).
    #[must_use]
    pub fn listing_all() -> Self {
        HashedTests {
            listed: Some(ListedTests::new()),
            ..Self::new()
        }
    }

    /// The key of `id`: its hash, or its private key after a detected clash.
    fn key(&self, id: &str) -> u64 {
        self.key_hashed(id, (self.hash)(id))
    }

    /// [`HashedTests::key`] of `id` whose hash is `hash`.
    fn key_hashed(&self, id: &str, hash: u64) -> u64 {
        if !self.spill.is_empty() {
            if let Some(&k) = self.spill.get(id) {
                return k;
            }
        }
        hash
    }

    /// The hash this store keys `id` by ([`id_hash`]): a caller that hashes an id
    /// once for its own use hands it to [`HashedTests::outcome_hashed`] and
    /// [`HashedTests::record_hashed`].
    #[must_use]
    pub fn hash_of(&self, id: &str) -> u64 {
        (self.hash)(id)
    }

    /// Notes that `key` is in `named`.
    fn mark_named(&mut self, key: u64) {
        if self.named_bits.is_empty() {
            self.named_bits = vec![0; (1 << NAMED_BITS) / 64];
        }
        let (w, bit) = named_bit(key);
        self.named_bits[w] |= bit;
        // in log form the filter covers named keys too: a key it never noted is
        // answered with one look (see `outcome`)
        if self.log.is_some() && self.seen.is_on() && self.seen.note(key) {
            self.rebuild_seen(Some(key));
        }
    }

    /// Sizes the seen filter for twice the keys noted so far plus `extra`, and notes
    /// them all (the log's, the folded tables', the named ones and `extra`).
    fn rebuild_seen(&mut self, extra: Option<u64>) {
        let Some(log) = self.log.as_ref() else { return };
        let n = (self.logged + self.named.len() + 1) * 2;
        let keys = log
            .iter()
            .flatten()
            .map(|e| e.hash)
            .chain(
                self.folded
                    .iter()
                    .flat_map(|t| t.live_slots().map(|s| s.hash)),
            )
            .chain(self.named.keys().copied())
            .chain(extra);
        self.seen.rebuild(n, keys);
    }

    /// False when `key` is surely not in `named`.
    fn maybe_named(&self, key: u64) -> bool {
        maybe_named(&self.named_bits, key)
    }

    /// A private key for `id`, whose hash a different named id holds.
    fn spill_key(&mut self, id: &str, hash: u64) -> u64 {
        self.index_all();
        let mut p = hash;
        loop {
            p = p.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15;
            if !self.named.contains_key(&p) && self.table.find(p).is_none() {
                break;
            }
        }
        self.spill.insert(id.to_string(), p);
        p
    }

    /// Makes room for `n` more tests.
    pub fn reserve(&mut self, n: usize) {
        self.announced = self.announced.saturating_add(n);
        match self.log.as_mut() {
            // a store asked about its tests folds its parts as it goes
            Some(_) if !self.folded.is_empty() => {}
            Some(log) => {
                let each = n / LOG_PARTS + n / LOG_PARTS / 8 + 1;
                for part in log {
                    part.reserve(each);
                }
            }
            None => self.table.reserve(n),
        }
    }

    /// Makes room for `n` more failing or flaky tests (their ids and messages), capped
    /// at `NAMED_RESERVE_LIMIT` (2^18): a map grown by doubling holds its old and new
    /// table at once (1 MiB over a 100k-case report's peak with 20,000 failing;
    /// `valgrind --tool=massif`).
    pub fn reserve_failing(&mut self, n: usize) {
        let room = NAMED_RESERVE_LIMIT.saturating_sub(self.named.capacity());
        self.named.reserve(n.min(room));
    }

    /// Folds the log, calling `f` with each unnamed test (hash, first position,
    /// outcome state) and moving a named test's first position to its first attempt.
    fn fold_log(
        log: Vec<Vec<Slot>>,
        folded: Vec<Table>,
        named: &mut HashMap<u64, Named, IdHasher>,
        named_bits: &[u64],
        mut f: impl FnMut(Slot),
    ) {
        let mut local = Table::default();
        let mut folded = folded.into_iter();
        for part in log {
            match folded.next() {
                // the later attempts go onto what was folded before
                Some(t) if t.live > 0 => local = t,
                _ => local.clear(),
            }
            local.reserve(part.len());
            for e in &part {
                local.put(e.hash, e.first, e.state);
            }
            drop(part);
            for s in local.live_slots() {
                // most tests were never named: the bit says so without a map lookup
                let named = maybe_named(named_bits, s.hash)
                    .then(|| named.get_mut(&s.hash))
                    .flatten();
                match named {
                    Some(n) => n.first = n.first.min(s.first),
                    None => f(*s),
                }
            }
        }
    }

    /// Moves the store from its log to its table (once).
    fn index_all(&mut self) {
        let Some(log) = self.log.take() else { return };
        let n: usize = log.iter().map(Vec::len).sum();
        let mut table = std::mem::take(&mut self.table);
        table.reserve(n.max(self.announced));
        let folded = std::mem::take(&mut self.folded);
        Self::fold_log(log, folded, &mut self.named, &self.named_bits, |s| {
            table.put(s.hash, s.first, s.state)
        });
        self.table = table;
    }

    /// The outcome recorded for `id`.
    ///
    /// In log form a key the seen filter never noted is answered at once, and one
    /// it may hold by its log part, folded into the part's table.
    pub fn outcome(&mut self, id: &str) -> Option<Outcome> {
        self.outcome_hashed(id, self.hash_of(id))
    }

    /// [`HashedTests::outcome`] of `id` whose [`HashedTests::hash_of`] is `hash`.
    pub fn outcome_hashed(&mut self, id: &str, hash: u64) -> Option<Outcome> {
        let key = self.key_hashed(id, hash);
        // in log form the filter covers named keys too (made at the first question:
        // a parser that never asks, libtest's, never pays for it)
        if self.log.is_some() {
            if !self.seen.is_on() {
                self.rebuild_seen(None);
            }
            if !self.seen.may_hold(key) {
                return None;
            }
        }
        if let Some(n) = self
            .maybe_named(key)
            .then(|| self.named.get(&key))
            .flatten()
        {
            return Some(n.outcome);
        }
        if let Some(log) = self.log.as_mut() {
            let p = (key & 0xff) as usize;
            // a part never folded is scanned while its scans have cost less than
            // a fold of it would (a false "maybe" is rare): no table is made for
            // it, and the end folds it in its turn
            let unfolded = self.folded.get(p).map_or(true, |t| t.slots.is_empty());
            if unfolded && self.scanned[p] < SCANS_PER_ENTRY * log[p].len() {
                let part = &log[p];
                let at = part.iter().rposition(|e| e.hash == key);
                self.scanned[p] += at.map_or(part.len(), |i| part.len() - i);
                return at.and_then(|i| outcome_of(part[i].state));
            }
            if self.folded.is_empty() {
                self.folded.resize_with(LOG_PARTS, Table::default);
            }
            let (part, table) = (&mut log[p], &mut self.folded[p]);
            // a part's table made at once for its share of the announced tests:
            // tables regrown piecemeal leave freed slot arrays across the heap
            // (0.3 MiB of peak RSS for a 100k-case report)
            let share = if table.slots.is_empty() {
                self.announced / LOG_PARTS + self.announced / LOG_PARTS / 8
            } else {
                0
            };
            table.reserve(part.len().max(share));
            for e in part.drain(..) {
                table.put(e.hash, e.first, e.state);
            }
            if share > 0 {
                // a folded part stays short: at its first fold the room reserved
                // for its share of a whole announced run goes back (see `reserve`)
                part.shrink_to_fit();
            }
            return table
                .find(key)
                .and_then(|i| outcome_of(table.slots[i].state));
        }
        self.index_all();
        self.table
            .find(key)
            .and_then(|i| outcome_of(self.table.slots[i].state))
    }

    /// True when `id` is recorded as failing (answered without a fold).
    #[must_use]
    pub fn is_failing(&self, id: &str) -> bool {
        self.named
            .get(&self.key(id))
            .is_some_and(|n| n.outcome.is_failing())
    }

    /// Records one attempt of `id`: the outcome kept is `merge(previous outcome)`
    /// (`None` for a test not seen before); `message` (already normalized, `None`
    /// for a passing attempt) is kept by `rule` while the outcome is failing.
    ///
    /// `merge` must give the same outcome for a previous `Passed` or `Skipped` as for
    /// `None` (the earlier outcome of a test that never failed is not looked up).
    pub fn record(
        &mut self,
        id: &str,
        merge: impl FnOnce(Option<Outcome>) -> Outcome,
        message: Option<String>,
        rule: MessageRule,
    ) {
        self.record_hashed(id, self.hash_of(id), merge, message, rule);
    }

    /// [`HashedTests::record`] of `id` whose [`HashedTests::hash_of`] is `hash`.
    pub fn record_hashed(
        &mut self,
        id: &str,
        hash: u64,
        merge: impl FnOnce(Option<Outcome>) -> Outcome,
        message: Option<String>,
        rule: MessageRule,
    ) {
        let mut key = self.key_hashed(id, hash);
        let pos = self.next;
        self.next = self.next.saturating_add(1);
        if let Some(l) = self.listed.as_mut() {
            l.push(id);
        }
        // a key the seen filter never noted is no named key either (the filter's
        // word is in cache when the caller has just asked about this test; the
        // named bits' is not)
        let unseen = self.log.is_some() && self.seen.is_on() && !self.seen.may_hold(key);
        let clash = if !unseen && self.maybe_named(key) {
            self.named.get(&key).map(|n| n.id != id)
        } else {
            None
        };
        if clash == Some(true) {
            key = self.spill_key(id, key);
        }
        if let Some(n) = (!unseen && self.maybe_named(key))
            .then(|| self.named.get_mut(&key))
            .flatten()
        {
            let o = merge(Some(n.outcome));
            n.outcome = o;
            match (o.is_failing(), rule, message) {
                (true, _, Some(m)) => n.message = Some(m),
                (true, MessageRule::KeepWhenNone, None) => {}
                _ => n.message = None,
            }
            return;
        }
        let o = merge(None);
        if keeps_text(o) {
            // its earlier attempts, if any, were passed or skipped: only the first
            // position is left to find (at the fold, or in the table now)
            let first = match self.log {
                Some(_) => pos,
                None => self.table.take(key).map_or(pos, |s| s.first),
            };
            self.mark_named(key);
            self.named.insert(
                key,
                Named {
                    id: id.to_string(),
                    outcome: o,
                    first,
                    message: message.filter(|_| o.is_failing()),
                },
            );
            return;
        }
        match self.log.as_mut() {
            // by the low byte: the fold's tables pick slots by the top bits
            Some(log) => {
                log[(key & 0xff) as usize].push(Slot {
                    hash: key,
                    first: pos,
                    state: code(o),
                });
                self.logged += 1;
                if self.seen.is_on() && self.seen.note(key) {
                    self.rebuild_seen(None);
                }
            }
            None => self.table.put(key, pos, code(o)),
        }
    }

    /// Sets the message of `id` when it is failing and has none yet.
    pub fn set_message(&mut self, id: &str, message: impl FnOnce() -> String) {
        if let Some(n) = self.named.get_mut(&self.key(id)) {
            if n.outcome.is_failing() && n.message.is_none() {
                let m = message();
                if !m.is_empty() {
                    n.message = Some(m);
                }
            }
        }
    }

    /// Forgets `id`; returns what was recorded for it.
    pub fn remove(&mut self, id: &str) -> Option<TestResult> {
        self.index_all();
        let key = self.key(id);
        if let Some(n) = self.named.remove(&key) {
            return Some(TestResult {
                id: id.to_string(),
                outcome: n.outcome,
                message: n.message,
            });
        }
        let s = self.table.take(key)?;
        Some(TestResult {
            id: id.to_string(),
            outcome: outcome_of(s.state)?,
            message: None,
        })
    }

    /// Number of tests recorded.
    pub fn len(&mut self) -> usize {
        self.index_all();
        self.table.live + self.named.len()
    }

    /// True when no test was recorded.
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// True when some recorded test is failing.
    #[must_use]
    pub fn any_failing(&self) -> bool {
        self.named.values().any(|n| n.outcome.is_failing())
    }

    /// Number of recorded tests with outcome `o`.
    pub fn count(&mut self, o: Outcome) -> usize {
        self.index_all();
        let c = code(o);
        self.table.live_slots().filter(|s| s.state == c).count()
            + self.named.values().filter(|n| n.outcome == o).count()
    }

    /// The failing tests with their ids and messages, in first-seen order, the
    /// counts of all the others, and under [`Listing::Compact`] every test in
    /// first-seen order with its final outcome.
    #[must_use]
    pub fn finish(mut self) -> (Vec<TestResult>, Counts, Option<ListedTests>) {
        let mut rest = Counts::default();
        let mut listed = self.listed.take();
        // counts an unlisted test and lists it at its first position
        let add = |rest: &mut Counts, listed: &mut Option<ListedTests>, first: u32, o: Outcome| {
            match o {
                Outcome::Passed => rest.passed += 1,
                Outcome::Skipped => rest.skipped += 1,
                Outcome::FlakyPassed => rest.flaky += 1,
                // failing tests are named; a failing unnamed record cannot be
                Outcome::Failed | Outcome::Errored => rest.failed += 1,
            }
            if let Some(l) = listed.as_mut() {
                l.set(first as usize, o);
            }
        };
        let mut add_slot = |s: &Slot| {
            if let Some(o) = outcome_of(s.state) {
                add(&mut rest, &mut listed, s.first, o);
            }
        };
        match self.log.take() {
            Some(log) => {
                let folded = std::mem::take(&mut self.folded);
                Self::fold_log(log, folded, &mut self.named, &self.named_bits, |s| {
                    add_slot(&s);
                });
            }
            None => self.table.live_slots().for_each(&mut add_slot),
        }
        // the table's memory is free before the failing list is built
        self.table = Table::default();
        let mut failing = Vec::with_capacity(self.named.len());
        for n in self.named.into_values() {
            if n.outcome.is_failing() {
                if let Some(l) = listed.as_mut() {
                    l.set(n.first as usize, n.outcome);
                }
                failing.push((
                    n.first,
                    TestResult {
                        id: n.id,
                        outcome: n.outcome,
                        message: n.message,
                    },
                ));
            } else {
                add(&mut rest, &mut listed, n.first, n.outcome);
            }
        }
        failing.sort_unstable_by_key(|(first, _)| *first);
        if let Some(l) = listed.as_mut() {
            l.shrink();
        }
        (failing.into_iter().map(|(_, t)| t).collect(), rest, listed)
    }
}

/// The hash `store` keys `id` by ([`HashedTests::hash_of`]), or without a store
/// [`id_hash`], the full store's: what a parser that hashes an id for its own use
/// hands back to its collector or builder.
#[must_use]
pub fn store_hash(store: Option<&HashedTests>, id: &str) -> u64 {
    store.map_or_else(|| id_hash(id), |h| h.hash_of(id))
}

/// The store a [`Listing`] asks for: `Some` for [`Listing::Failing`] and
/// [`Listing::Compact`].
#[must_use]
pub fn for_listing(listing: Listing) -> Option<HashedTests> {
    match listing {
        Listing::Full => None,
        Listing::Failing => Some(HashedTests::new()),
        Listing::Compact => Some(HashedTests::listing_all()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::model::Outcome::{Errored, Failed, FlakyPassed, Passed, Skipped};
    use crate::check::model::{Format, ParsedRun};
    use crate::check::parse::structured::RunBuilder;
    use crate::check::parse::util::Collector;

    /// One attempt: id, outcome, message.
    type Attempt = (&'static str, Outcome, Option<&'static str>);

    /// What a failing-only parse must equal: counts, and the failing tests in order
    /// with their messages.
    fn view(r: &ParsedRun) -> (Counts, Vec<(String, Outcome, Option<String>)>) {
        let failing = r
            .tests
            .iter()
            .filter(|t| t.outcome.is_failing())
            .map(|t| (t.id.clone(), t.outcome, t.message.clone()))
            .collect();
        (r.counts(), failing)
    }

    fn counts(passed: u64, failed: u64, skipped: u64, flaky: u64) -> Counts {
        Counts {
            passed,
            failed,
            skipped,
            flaky,
        }
    }

    /// Each case: attempts, then the expected counts and failing ids in order.
    /// A case: name, attempts, expected (passed, failed, skipped, flaky), failing ids.
    type Case = (
        &'static str,
        &'static [Attempt],
        (u64, u64, u64, u64),
        &'static [&'static str],
    );

    const CASES: &[Case] = &[
        (
            "distinct tests",
            &[
                ("a", Passed, None),
                ("b", Skipped, None),
                ("c", Failed, Some("x")),
            ],
            (1, 1, 1, 0),
            &["c"],
        ),
        (
            "duplicate passes count once",
            &[
                ("a", Passed, None),
                ("a", Passed, None),
                ("a", Passed, None),
            ],
            (1, 0, 0, 0),
            &[],
        ),
        (
            "fail then pass is flaky",
            &[("a", Failed, Some("boom")), ("a", Passed, None)],
            (0, 0, 0, 1),
            &[],
        ),
        (
            "pass then fail: later attempt decides",
            &[
                ("a", Passed, None),
                ("b", Passed, None),
                ("a", Errored, Some("teardown")),
            ],
            (1, 1, 0, 0),
            &["a"],
        ),
        (
            "fail, pass, fail again",
            &[
                ("a", Failed, Some("one")),
                ("a", Passed, None),
                ("a", Failed, None),
            ],
            (0, 1, 0, 0),
            &["a"],
        ),
        (
            "skip then pass",
            &[("a", Skipped, None), ("a", Passed, None)],
            (1, 0, 0, 0),
            &[],
        ),
        (
            "first-seen order of failing tests",
            &[
                ("b", Passed, None),
                ("a", Failed, None),
                ("b", Failed, Some("late")),
            ],
            (0, 2, 0, 0),
            &["b", "a"],
        ),
    ];

    fn attempts_into(c: &mut Collector, attempts: &[Attempt]) {
        for (id, o, m) in attempts {
            c.record(id, *o, m.map(str::to_string));
        }
    }

    fn finish(c: Collector) -> ParsedRun {
        c.finish_text(Format::Lines, "lines", true, None, Some(0), Vec::new())
    }

    #[test]
    fn collector_merge_rules_match_the_full_store() {
        for (name, attempts, (p, f, s, fl), failing) in CASES {
            let mut full = Collector::new();
            let mut hashed = Collector::with_listing(Listing::Failing);
            attempts_into(&mut full, attempts);
            attempts_into(&mut hashed, attempts);
            for (id, _, _) in *attempts {
                assert_eq!(hashed.outcome(id), full.outcome(id), "{name}: {id}");
            }
            assert_eq!(hashed.len(), full.len(), "{name}");
            assert_eq!(hashed.any_failing(), full.any_failing(), "{name}");
            let (full, hashed) = (finish(full), finish(hashed));
            assert_eq!(view(&hashed), view(&full), "{name}");
            let (got, ids) = view(&hashed);
            assert_eq!(got, counts(*p, *f, *s, *fl), "{name}");
            let ids: Vec<&str> = ids.iter().map(|(i, _, _)| i.as_str()).collect();
            assert_eq!(ids, *failing, "{name}");
            assert!(
                hashed.tests.len() <= failing.len(),
                "{name}: passing tests listed"
            );
        }
    }

    #[test]
    fn builder_merge_rules_match_the_full_store() {
        for (name, attempts, _, _) in CASES {
            let mut full = RunBuilder::new(Format::Junit, "junit");
            let mut hashed = RunBuilder::with_listing(Format::Junit, "junit", Listing::Failing);
            for (id, o, m) in *attempts {
                full.attempt(id, *o, *m);
                hashed.attempt(id, *o, *m);
            }
            assert_eq!(
                view(&hashed.finish(true)),
                view(&full.finish(true)),
                "{name}"
            );
        }
        // distinct ids get the same suffixes
        let mut full = RunBuilder::new(Format::Junit, "junit");
        let mut hashed = RunBuilder::with_listing(Format::Junit, "junit", Listing::Failing);
        for o in [Passed, Failed, Failed] {
            assert_eq!(
                hashed.distinct("x", o, Some("m")),
                full.distinct("x", o, Some("m"))
            );
        }
        assert_eq!(view(&hashed.finish(true)), view(&full.finish(true)));
    }

    /// Under [`Listing::Compact`] both stores expand to what the full store lists:
    /// every test once, in first-seen order, with its final outcome and message; a
    /// removed test is not listed, one recorded again is listed at its new place.
    /// Each case runs with the store in its log form and moved to its table (by an
    /// `outcome` question before the first attempt).
    #[test]
    fn compact_listing_expands_to_the_full_store() {
        let removal: &[Attempt] = &[
            ("g", Failed, Some("x")),
            ("t", Passed, None),
            ("u", Skipped, None),
            ("t", Failed, Some("late")),
        ];
        for table in [false, true] {
            for (name, attempts, _, _) in CASES {
                let mut full = Collector::new();
                let mut compact = Collector::with_listing(Listing::Compact);
                if table {
                    assert_eq!(compact.outcome("none"), None);
                }
                attempts_into(&mut full, attempts);
                attempts_into(&mut compact, attempts);
                let compact = finish(compact);
                assert!(compact.listed.is_some(), "{name}");
                assert_eq!(compact.into_full(), finish(full), "{name} (table: {table})");

                let mut full = RunBuilder::new(Format::Junit, "junit");
                let mut compact =
                    RunBuilder::with_listing(Format::Junit, "junit", Listing::Compact);
                for (id, o, m) in *attempts {
                    full.attempt(id, *o, *m);
                    compact.attempt(id, *o, *m);
                }
                assert_eq!(
                    compact.finish(true).into_full(),
                    full.finish(true),
                    "{name} (builder)"
                );
            }
            let mut full = Collector::new();
            let mut compact = Collector::with_listing(Listing::Compact);
            for c in [&mut full, &mut compact] {
                attempts_into(c, removal);
                c.remove("g");
                c.remove("u");
                c.record("u", Passed, None);
            }
            assert_eq!(finish(compact).into_full(), finish(full), "removal");
        }
    }

    #[test]
    fn messages_follow_the_rules_of_each_store() {
        let mut c = Collector::with_listing(Listing::Failing);
        c.record("a", Failed, Some("first".into()));
        c.record("a", Failed, None);
        c.set_message("a", "ignored: a message is already kept");
        c.record("b", Failed, None);
        c.set_message("b", "from the section");
        c.record("p", Passed, None);
        c.set_message("p", "a passing test keeps none");
        let r = finish(c);
        let msg = |id: &str| {
            r.tests
                .iter()
                .find(|t| t.id == id)
                .and_then(|t| t.message.clone())
        };
        assert_eq!(msg("a").as_deref(), Some("first"));
        assert_eq!(msg("b").as_deref(), Some("from the section"));
        assert_eq!(msg("p"), None);

        let mut b = RunBuilder::with_listing(Format::Junit, "junit", Listing::Failing);
        b.attempt("a", Failed, Some("first"));
        b.attempt("a", Failed, None);
        assert_eq!(b.finish(true).tests[0].message, None);
    }

    #[test]
    fn removed_tests_are_forgotten_and_can_come_back() {
        let mut c = Collector::with_listing(Listing::Failing);
        c.record("group", Failed, Some("x".into()));
        c.record("t", Passed, None);
        let taken = c.take("group").expect("recorded");
        assert_eq!(
            (taken.id.as_str(), taken.outcome, taken.message.as_deref()),
            ("group", Failed, Some("x"))
        );
        assert_eq!(c.outcome("group"), None);
        assert_eq!(c.len(), 1);
        c.remove("t");
        assert!(c.is_empty());
        c.record("t", Skipped, None);
        assert_eq!(view(&finish(c)).0, counts(0, 0, 1, 0));
    }

    #[test]
    fn the_table_grows_and_keeps_every_test() {
        let mut h = HashedTests::new();
        h.reserve(3);
        let ids: Vec<String> = (0..5000).map(|i| format!("t{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let o = if i % 7 == 0 { Failed } else { Passed };
            h.record(id, |_| o, None, MessageRule::KeepWhenNone);
        }
        assert_eq!(h.len(), 5000);
        assert_eq!(h.outcome("t7"), Some(Failed));
        assert_eq!(h.outcome("t8"), Some(Passed));
        assert_eq!(h.outcome("nope"), None);
        let (failing, rest, _) = h.finish();
        assert_eq!(failing.len(), 715);
        assert_eq!(failing[1].id, "t7");
        assert_eq!(rest, counts(4285, 0, 0, 0));
    }

    /// Asked about its tests while in log form, the store answers as its table
    /// would (later attempt decides, a test never recorded is `None`), scanning a
    /// log part when the filter says "maybe" and folding it once scans cost more
    /// than a fold, while the filter grows past its first size and tests are
    /// recorded after their part was folded; moved to its table it answers alike,
    /// and the end counts every test once.
    #[test]
    fn outcomes_are_answered_in_log_form() {
        // `g` gets the same attempts and questions and is finished in log form
        let mut h = HashedTests::new();
        let mut g = HashedTests::new();
        let ids: Vec<String> = (0..20_000).map(|i| format!("case {i}")).collect();
        let want = |i: usize| match i % 5 {
            0 => Some(Skipped),
            3 => Some(Failed),
            _ => Some(Passed),
        };
        for (i, id) in ids.iter().enumerate() {
            // asked before each test is recorded, as a report's repeated-name check
            // asks
            assert_eq!(h.outcome(id), None, "{id}");
            assert_eq!(g.outcome(id), None, "{id}");
            // a retried test: the later attempt decides
            let o = want(i).expect("an outcome");
            for s in [&mut h, &mut g] {
                if i % 5 == 0 {
                    s.record(id, |_| Passed, None, MessageRule::KeepWhenNone);
                }
                s.record(id, |p| merge_for(p, o), None, MessageRule::KeepWhenNone);
            }
            if i % 1000 == 0 {
                assert_eq!(h.outcome(id), want(i), "{id}");
            }
        }
        assert!(h.seen.bits.len() * 64 > 1 << 16, "the filter grew");
        assert!(h.scanned.iter().any(|&n| n > 0), "some part was scanned");
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(h.outcome(id), want(i), "{id}");
            if i % 3 == 0 {
                assert_eq!(g.outcome(id), want(i), "{id}");
            }
        }
        // asked about every test, a part's scans reach their budget: it is folded
        assert!(h.folded.iter().any(|t| t.live > 0), "some part was folded");
        assert!(h.log.is_some() && g.log.is_some(), "still in log form");
        // a retry of a test whose part is folded: the later attempt still decides
        for s in [&mut h, &mut g] {
            s.record(
                &ids[1],
                |p| merge_for(p, Skipped),
                None,
                MessageRule::KeepWhenNone,
            );
        }
        assert_eq!(h.outcome(&ids[1]), Some(Skipped));
        assert_eq!(h.len(), 20_000);
        assert!(h.log.is_none(), "moved to the table");
        assert_eq!(h.outcome(&ids[1]), Some(Skipped));
        assert_eq!(h.outcome(&ids[2]), Some(Passed));
        assert_eq!(h.outcome("never"), None);
        // a store never asked (libtest's) makes no filter
        let mut quiet = HashedTests::new();
        for id in &ids {
            quiet.record(id, |_| Passed, None, MessageRule::KeepWhenNone);
        }
        assert!(!quiet.seen.is_on());
        assert_eq!(quiet.finish().1, counts(20_000, 0, 0, 0));
        for s in [h, g] {
            let (failing, rest, _) = s.finish();
            assert_eq!(failing.len(), 4000);
            assert_eq!(failing[0].id, "case 3");
            assert_eq!(rest, counts(11_999, 0, 4001, 0));
        }
    }

    /// The merge rule of these tests: a later attempt decides, a pass after a
    /// failure is flaky (as both real rules give).
    fn merge_for(prev: Option<Outcome>, o: Outcome) -> Outcome {
        match prev {
            Some(p) if p.is_failing() && o.is_passing() => FlakyPassed,
            _ => o,
        }
    }

    /// The full store's index: first position wins, growth keeps every entry, a
    /// cleared table is empty.
    #[test]
    fn position_table_keeps_the_first_position() {
        let mut t = PositionTable::default();
        for (hash, pos, held) in [
            (7u64, 0usize, None),
            (7, 5, Some(0)),
            (8, 1, None),
            (7 + 16, 2, None),
        ] {
            assert_eq!(t.get_or_insert(hash, pos), held, "{hash}");
        }
        assert_eq!(
            (t.get(7), t.get(8), t.get(23), t.get(9)),
            (Some(0), Some(1), Some(2), None)
        );
        for h in 100..10_100u64 {
            assert_eq!(
                t.get_or_insert(h.wrapping_mul(0x9e37_79b9_7f4a_7c15), h as usize),
                None
            );
        }
        assert_eq!(t.get(7), Some(0));
        assert_eq!(
            t.get(5000u64.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            Some(5000)
        );
        t.clear();
        assert_eq!(t.get(7), None);
    }

    /// With every id hashing alike, failing ids are still told apart (the clash is
    /// seen and the later id gets a private key); passing ids that clash merge, as
    /// the module doc says.
    #[test]
    fn a_clash_between_failing_ids_is_detected() {
        let mut h = HashedTests::new();
        h.hash = |_| 42;
        let rec = |h: &mut HashedTests, id: &str, o: Outcome| {
            h.record(
                id,
                |prev| {
                    prev.map_or(o, |p| {
                        if p.is_failing() && o == Passed {
                            FlakyPassed
                        } else {
                            o
                        }
                    })
                },
                Some(format!("{id} broke")).filter(|_| o.is_failing()),
                MessageRule::KeepWhenNone,
            );
        };
        rec(&mut h, "a", Failed);
        rec(&mut h, "b", Failed);
        rec(&mut h, "b", Passed);
        rec(&mut h, "c", Errored);
        assert_eq!(h.outcome("a"), Some(Failed));
        assert_eq!(h.outcome("b"), Some(FlakyPassed));
        assert_eq!(h.outcome("c"), Some(Errored));
        let (failing, rest, _) = h.finish();
        let got: Vec<_> = failing
            .iter()
            .map(|t| (t.id.as_str(), t.outcome, t.message.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", Failed, Some("a broke")),
                ("c", Errored, Some("c broke"))
            ]
        );
        assert_eq!(rest, counts(0, 0, 0, 1));

        let mut h = HashedTests::new();
        h.hash = |_| 42;
        h.record("p", |_| Passed, None, MessageRule::KeepWhenNone);
        h.record("q", |_| Passed, None, MessageRule::KeepWhenNone);
        assert_eq!(h.len(), 1, "an unseen clash merges two passing tests");
    }
}
