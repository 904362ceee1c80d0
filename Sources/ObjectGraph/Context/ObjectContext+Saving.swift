import Foundation

/// A change that is not saved: what a pending object's save would write. The filesystem shows
/// why it is not saved and keeps what never could be in a recovery file.
public struct PendingChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case inserted, updated, deleted
    }

    public var objectID: ObjectID
    public var kind: Kind
    /// For an inserted object every non-nil attribute; for an updated one the attributes it
    /// changes (nil: set to nil). Empty for a deleted object.
    public var attributes: [String: AttributeValue?]
    /// To-one relationships set (all of an inserted object's, the changed ones of an update).
    public var toOne: [String: ObjectID?]
    /// To-many relationships whose contents change, with their new contents.
    public var toMany: [String: [ObjectID]]
    /// Why it was not saved, when a save was tried.
    public var failure: ObjectGraphError?

    public init(
        objectID: ObjectID, kind: Kind, attributes: [String: AttributeValue?] = [:], toOne: [String: ObjectID?] = [:],
        toMany: [String: [ObjectID]] = [:], failure: ObjectGraphError? = nil
    ) {
        self.objectID = objectID
        self.kind = kind
        self.attributes = attributes
        self.toOne = toOne
        self.toMany = toMany
        self.failure = failure
    }
}

/// What ``ObjectContext/save(holding:)`` did.
public struct SaveOutcome: Sendable {
    /// Objects whose changes the store now holds (inserted, updated or deleted).
    public var saved: [ObjectID] = []
    /// Objects whose changes stay pending, with why: a value that fails validation, a key taken,
    /// a store error. They are tried again once one of the objects of their group changes
    /// (store errors: at every save).
    public var failed: [ObjectID: ObjectGraphError] = [:]
    /// Changes dropped because another process changed or deleted what they change since it was
    /// read: its change is kept, these are not applied (ever), and their objects read afresh.
    public var conflicts: [PendingChange] = []
    /// Objects saved although values their change did not touch break the model (left as the
    /// store held them: an app that broke its own model), with what breaks it, for a warning.
    /// A change is refused only for what it sets (``ChangeValidation``).
    public var untouchedViolations: [ObjectID: [String]] = [:]
    /// Whether the metadata change (if any) was saved.
    public var savedMetadata = false
    /// A failure that is not about any object (the disk, a trigger, a lock): nothing was saved.
    public var storeError: ObjectGraphError?
    /// What the store changed on its own while saving (Core Data's triggers, relationship
    /// clean-up): those objects were read again, and what shows them must be refreshed (when the
    /// store could not name them all, every object that was cached is listed).
    public var storeEffects = SaveEffects()

    public init() {}
}

extension ObjectContext {
    /// Whether there is anything to save.
    public var hasChanges: Bool {
        state.withLock { state in
            guard state.metadata == nil else { return true }
            if state.inFlight.isEmpty { return !state.pending.isEmpty || !state.deleted.isEmpty }
            // Objects in flight stay pending while their save runs; they count once changed again.
            return state.pending.keys.contains { changedSinceFlight($0, state) }
                || state.deleted.keys.contains { changedSinceFlight($0, state) }
        }
    }

    /// Whether `id` has a change that no save in flight is writing.
    func changedSinceFlight(_ id: ObjectID, _ state: State) -> Bool {
        guard let flight = state.inFlight[id] else { return true }
        return flight.changeCount != state.changeCount[id, default: 0]
    }

    /// Validates every changed object and writes all changes as one transaction. On failure
    /// nothing is written and the changes stay pending (fix them, or ``rollback()``).
    ///
    /// - Throws: ``ObjectGraphError/Code/validation`` naming the object and property;
    ///   ``ObjectGraphError/Code/conflict`` when another context or process changed what one of
    ///   the changed objects changes since this context read it.
    public func save() throws(ObjectGraphError) {
        try saveLock.withLock { _ throws(ObjectGraphError) in
            let round = try changeLock.withLock { _ throws(ObjectGraphError) -> SaveRound? in
                let (ids, metadata) = state.withLock { state in
                    ((Array(state.pending.keys) + Array(state.deleted.keys)).sorted(), state.metadata)
                }
                guard !ids.isEmpty || metadata != nil else { return nil }
                for id in ids { _ = try validateForSave(id) }
                return begin(ids, metadata: metadata)
            }
            guard let round else { return }
            let effects: SaveEffects
            do throws(ObjectGraphError) {
                effects = try store.saveReportingEffects(round.request)
            } catch {
                changeLock.withLock { _ in state.withLock { putBack(round.ids, &$0) } }
                throw error
            }
            finish(round, effects: effects)
        }
    }

    /// Saves every change group that can be saved and leaves the rest pending: one transaction
    /// for all valid groups; a group the store refuses (naming its object) is taken out and the
    /// rest is tried again. Groups with an object in `held` are not tried (the filesystem holds
    /// objects a copy is still filling), nor groups that failed and did not change since.
    ///
    /// A group that conflicts with another process's change is dropped (see
    /// ``SaveOutcome/conflicts``); every other failure leaves its group pending.
    ///
    /// The store's save runs without the state and change locks: while it waits (on the disk, a
    /// lock, the network), reads are served from memory, the objects being saved show what is
    /// being saved, and changes go on: to other objects, and to objects in flight too, which
    /// then stay pending, changed relative to what this save wrote (or, when it fails, to what
    /// they were read as).
    public func save(holding held: Set<ObjectID> = []) -> SaveOutcome {
        saveLock.withLock { _ in
            var outcome = SaveOutcome()
            // Groups this call refused: not tried again by it.
            var refused: Set<ObjectID> = []
            // Values the changes saved leave breaking the model (SaveOutcome.untouchedViolations).
            var untouched: [ObjectID: [String]] = [:]
            // Each round either saves everything left or refuses at least one group more.
            rounds: while true {
                let round = changeLock.withLock { _ -> SaveRound? in
                    let candidates = state.withLock { state -> ([[ObjectID]], StoreMetadata?) in
                        let groups = changeGroups(&state).filter { group in
                            guard !group.contains(where: { held.contains($0) || refused.contains($0) }) else {
                                return false
                            }
                            // A group that failed and did not change since would fail the same way.
                            return !group.allSatisfy { id in
                                guard let failure = state.failures[id] else { return false }
                                // A failure of the store (the disk, the network, room on the disk)
                                // may go away.
                                return failure.changeCount == state.changeCount[id, default: 0]
                                    && failure.error.code != .io && failure.error.code != .noSpace
                            }
                        }
                        return (groups, outcome.savedMetadata ? nil : state.metadata)
                    }
                    var groups = candidates.0
                    groups = groups.filter { group in
                        for id in group {
                            do throws(ObjectGraphError) {
                                let violations = try validateForSave(id)
                                if !violations.isEmpty { untouched[id] = violations }
                            } catch {
                                state.withLock { fail(group, error, &$0, &outcome) }
                                refused.formUnion(group)
                                return false
                            }
                        }
                        return true
                    }
                    guard !groups.isEmpty || candidates.1 != nil else { return nil }
                    return begin(groups.flatMap { $0 }, metadata: candidates.1)
                }
                guard let round else { break }
                do throws(ObjectGraphError) {
                    let effects = try store.saveReportingEffects(round.request)
                    outcome.storeEffects = finish(round, effects: effects)
                    outcome.saved += round.ids
                    if round.metadata != nil { outcome.savedMetadata = true }
                    break
                } catch {
                    let culprits = Set(error.objects)
                    let next = changeLock.withLock { _ -> AfterRefusal in
                        state.withLock { state -> AfterRefusal in
                            putBack(round.ids, &state)
                            let groups = changeGroups(&state).filter { $0.contains(where: round.ids.contains) }
                            let blamed = groups.filter { $0.contains(where: culprits.contains) }
                            guard !blamed.isEmpty else {
                                if groups.count > 1, Self.mayBeAboutOneGroup(error) {
                                    // A refusal that names no object (an SQLite UNIQUE index, a
                                    // trigger): the batch is split until the groups at fault are
                                    // found; the others are saved.
                                    return .split(groups)
                                }
                                // Not about any object (the disk, a lock): nothing was saved.
                                for group in groups { fail(group, error, &state, &outcome) }
                                outcome.storeError = error
                                return .stop
                            }
                            for group in blamed {
                                if error.code == .conflict {
                                    outcome.conflicts += drop(group, error, &state)
                                } else {
                                    fail(group, error, &state, &outcome)
                                }
                                refused.formUnion(group)
                            }
                            regroup(&state)
                            return .again
                        }
                    }
                    switch next {
                    case .again: continue
                    case .stop: break rounds
                    case .split(let groups):
                        saveApart(groups, metadata: round.metadata, &outcome)
                        break rounds
                    }
                }
            }
            let saved = Set(outcome.saved)
            outcome.untouchedViolations = untouched.filter { saved.contains($0.key) }
            return outcome
        }
    }

    /// What a save does after the store refused a round.
    private enum AfterRefusal {
        /// Tries the groups left again.
        case again
        /// Saves nothing more.
        case stop
        /// Saves these groups apart (``saveApart(_:metadata:_:)``).
        case split([[ObjectID]])
    }

    /// Whether a store's refusal that names no object may still be about the changes of some of
    /// the objects saved (a constraint, a value a trigger refuses) rather than about the store
    /// itself (the disk, a lock, a read-only file), after which nothing is worth trying again.
    static func mayBeAboutOneGroup(_ error: ObjectGraphError) -> Bool {
        ![.io, .noSpace, .busy, .readOnly, .corruptStore].contains(error.code)
    }

    /// Saves `groups` in halves, each half in its own transaction, splitting a refused half until
    /// the groups that are refused alone are found: those fail (pending, with the reason), every
    /// other group is saved. The metadata goes with the first transaction that succeeds. A
    /// refusal of one group takes O(log n) transactions to find.
    private func saveApart(_ groups: [[ObjectID]], metadata: StoreMetadata?, _ outcome: inout SaveOutcome) {
        var pendingMetadata = metadata
        var work: [[[ObjectID]]] = [Array(groups[(groups.count / 2)...]), Array(groups[..<(groups.count / 2)])]
        while let part = work.popLast() {
            guard !part.isEmpty else { continue }
            let round = changeLock.withLock { _ in begin(part.flatMap { $0 }, metadata: pendingMetadata) }
            do throws(ObjectGraphError) {
                let effects = try store.saveReportingEffects(round.request)
                let absorbed = finish(round, effects: effects)
                outcome.storeEffects.refreshed.formUnion(absorbed.refreshed)
                outcome.storeEffects.refreshesEverything =
                    outcome.storeEffects.refreshesEverything || absorbed.refreshesEverything
                // The first transaction's token: a commit of another process between two of them
                // moved the later ones' past it, and must still be seen.
                if outcome.storeEffects.changeTokenAtSave == nil {
                    outcome.storeEffects.changeTokenAtSave = absorbed.changeTokenAtSave
                }
                outcome.saved += round.ids
                if pendingMetadata != nil {
                    outcome.savedMetadata = true
                    pendingMetadata = nil
                }
            } catch {
                let alone = part.count == 1 || !Self.mayBeAboutOneGroup(error)
                changeLock.withLock { _ in
                    state.withLock { state in
                        putBack(round.ids, &state)
                        guard alone else { return }
                        for group in part {
                            if error.code == .conflict {
                                outcome.conflicts += drop(group, error, &state)
                            } else {
                                fail(group, error, &state, &outcome)
                            }
                        }
                        regroup(&state)
                    }
                }
                if alone {
                    if !Self.mayBeAboutOneGroup(error) { outcome.storeError = error }
                    continue
                }
                work.append(Array(part[(part.count / 2)...]))
                work.append(Array(part[..<(part.count / 2)]))
            }
        }
    }

    /// Attribute `name` of `id` as the store last had it, before this context's pending change of
    /// it (the current value when there is none).
    public func savedValue(of name: String, for id: ObjectID) throws(ObjectGraphError) -> AttributeValue? {
        if let original = state.withLock({ $0.pending[id]?.original }) {
            return original.attributes[name]
        }
        return try snapshot(of: id)?.attributes[name]
    }

    /// The objects whose pending changes failed their last save, with why.
    public var failures: [ObjectID: ObjectGraphError] {
        state.withLock { state in state.failures.mapValues(\.error) }
    }

    /// Every pending change, with why it failed where a save was tried.
    public func pendingChanges() -> [PendingChange] {
        state.withLock { state in
            let ids = (Array(state.pending.keys) + Array(state.deleted.keys)).sorted()
            return ids.map { describeChange($0, state) }
        }
    }

    /// The metadata this context changed and did not save yet.
    public var pendingMetadata: StoreMetadata? { state.withLock { $0.metadata } }

    /// The pending change of `id`, if it has one.
    public func pendingChange(of id: ObjectID) -> PendingChange? {
        state.withLock { state in
            state.pending[id] != nil || state.deleted[id] != nil ? describeChange(id, state) : nil
        }
    }

    /// Discards every unsaved change (after a save in flight ended).
    public func rollback() {
        saveLock.withLock { _ in
            changeLock.withLock { _ in
                state.withLock { state in
                    state.pending = [:]
                    state.deleted = [:]
                    state.metadata = nil
                    state.groupParent = [:]
                    state.changeCount = [:]
                    state.failures = [:]
                }
            }
        }
    }

    /// Discards the unsaved changes of every object changed together with one of `ids` (their
    /// whole groups, so no half of a relationship stays): what an error reported to a writer
    /// promised would never be applied. Returns the objects whose changes were discarded. A
    /// group a save is writing is discarded when that save ended (it may be saved by then).
    @discardableResult
    public func discardChanges(of ids: [ObjectID]) -> [ObjectID] {
        func discard() -> [ObjectID]? {
            changeLock.withLock { _ in
                state.withLock { state -> [ObjectID]? in
                    let groups = changeGroups(&state).filter { $0.contains(where: ids.contains) }
                    if groups.contains(where: { $0.contains { state.inFlight[$0] != nil } }) { return nil }
                    for group in groups { forget(group, &state) }
                    regroup(&state)
                    return groups.flatMap { $0 }
                }
            }
        }
        if let discarded = discard() { return discarded }
        return saveLock.withLock { _ in discard() ?? [] }
    }

    /// Sets attribute `name` of `id` back to the value the store holds, if it still is `value`
    /// (another change may have set it since): takes back one write that a writer was told failed.
    /// The object's other changes stay pending; when it has none left, nor any object changed
    /// with it, nothing of them is pending any more (no failure to report, nothing for a
    /// recovery file). Waits for a save in flight that writes `id`.
    public func revert(_ name: String, of id: ObjectID, ifStill value: AttributeValue?) {
        func revert() -> Bool {
            changeLock.withLock { _ in
                state.withLock { state -> Bool in
                    guard state.inFlight[id] == nil else { return false }
                    guard var pending = state.pending[id], pending.snapshot.attributes[name] == value else {
                        return true
                    }
                    if pending.isInserted {
                        pending.snapshot.attributes[name] = model[id.entity].attribute(named: name)?.defaultValue
                    } else {
                        pending.snapshot.attributes[name] = pending.original.attributes[name]
                    }
                    state.pending[id] = pending
                    state.changeCount[id, default: 0] += 1
                    forgetGroupIfUnchanged(of: id, &state)
                    return true
                }
            }
        }
        if !revert() { saveLock.withLock { _ in _ = revert() } }
    }

    /// Forgets the change group of `id` when none of its objects changes anything any more.
    private func forgetGroupIfUnchanged(of id: ObjectID, _ state: inout State) {
        let top = root(of: id, &state)
        var group: [ObjectID] = []
        for other in Array(state.pending.keys) + Array(state.deleted.keys) where root(of: other, &state) == top {
            guard state.deleted[other] == nil, let pending = state.pending[other], !pending.isInserted,
                SaveRequest.Update(snapshot: pending.snapshot, original: pending.original).isEmpty,
                pending.toMany.allSatisfy({ $0.value == (pending.originalToMany[$0.key] ?? []) })
            else { return }
            group.append(other)
        }
        forget(group, &state)
    }

    /// Forgets what is cached about `ids` so the next read fetches them again (Core Data's
    /// refreshObject with mergeChanges false). Pending changes of those objects are discarded.
    public func refresh(_ ids: [ObjectID]) {
        _ = discardChanges(of: ids)
        cache.remove(ids)
    }

    /// Takes what another process saved into the pending objects it did not change: a property
    /// this context did not change shows the store's value; a changed one keeps the value that
    /// was read, so the save still detects a conflict there. `fresh` are snapshots just read.
    public func rebasePendingChanges(on fresh: [Snapshot]) {
        changeLock.withLock { _ in state.withLock { state in rebase(on: fresh, &state) } }
    }

    func rebase(on fresh: [Snapshot], _ state: inout State) {
        for snapshot in fresh {
            guard var pending = state.pending[snapshot.objectID], !pending.isInserted else { continue }
            var original = pending.original
            let names = Set(snapshot.attributes.keys).union(original.attributes.keys)
            for name in names where pending.snapshot.attributes[name] == original.attributes[name] {
                pending.snapshot.attributes[name] = snapshot.attributes[name]
                original.attributes[name] = snapshot.attributes[name]
            }
            let links = Set(snapshot.toOne.keys).union(original.toOne.keys)
            for name in links where pending.snapshot.toOne[name] == original.toOne[name] {
                pending.snapshot.toOne[name] = snapshot.toOne[name]
                original.toOne[name] = snapshot.toOne[name]
            }
            original.version = snapshot.version
            pending.snapshot.version = snapshot.version
            pending.original = original
            state.pending[snapshot.objectID] = pending
        }
    }

    // MARK: - Saves in flight

    /// One store save: the objects it writes and the request.
    struct SaveRound {
        var ids: [ObjectID]
        var request: SaveRequest
        var metadata: StoreMetadata?
    }

    /// Makes the request for the changes of `ids` and puts them in flight: each pending object
    /// is replaced by what the store will hold once the save commits (the same values, its new
    /// version, its to-many lists), so reads show it and later changes build on it, and the
    /// change itself is kept aside (``InFlight``) to be put back if the save fails. Deleted
    /// objects stay deleted. Called holding ``changeLock``.
    func begin(_ ids: [ObjectID], metadata: StoreMetadata?) -> SaveRound {
        state.withLock { state in
            let request = request(for: ids, metadata: metadata, state)
            for id in ids {
                let count = state.changeCount[id, default: 0]
                guard let pending = state.pending[id] else {
                    if state.deleted[id] != nil { state.inFlight[id] = InFlight(pending: nil, changeCount: count) }
                    continue
                }
                state.inFlight[id] = InFlight(pending: pending, changeCount: count)
                var saved = pending.snapshot
                saved.version = pending.isInserted ? 1 : pending.original.version + (Self.writesRow(pending) ? 1 : 0)
                var layer = PendingObject(snapshot: saved, original: saved, isInserted: false)
                layer.toMany = pending.toMany
                if pending.isInserted {
                    // Every to-many list is here: the store may not hold the object yet.
                    for relationship in model[id.entity].persistentRelationships where relationship.isToMany {
                        if layer.toMany[relationship.name] == nil { layer.toMany[relationship.name] = [] }
                    }
                    layer.insertedInFlight = true
                }
                layer.originalToMany = layer.toMany
                state.pending[id] = layer
            }
            return SaveRound(ids: ids, request: request, metadata: metadata)
        }
    }

    /// Whether saving `pending` (not inserted) writes its row: a value or to-one changed, or a
    /// to-many list (the store then moves its version, ``SaveRequest``).
    static func writesRow(_ pending: PendingObject) -> Bool {
        !SaveRequest.Update(snapshot: pending.snapshot, original: pending.original).isEmpty
            || pending.toMany.contains { $0.value != (pending.originalToMany[$0.key] ?? []) }
    }

    /// Takes in a round the store saved: what was not changed again since it went in flight is
    /// the store's now (inserted rows go to the cache; an updated row the store found exactly as
    /// it was read (``SaveEffects/rowsAsRead``) goes to the cache as saved, with its new version;
    /// other updated ones are read again when next needed: another process may have changed what
    /// this save left alone); what was changed again stays pending on top of what was saved.
    /// Then the store's own effects.
    @discardableResult
    func finish(_ round: SaveRound, effects: SaveEffects) -> SaveEffects {
        let (reported, toRebase) = changeLock.withLock { _ in
            state.withLock { state -> (SaveEffects, [ObjectID]) in
                state.saves += 1
                state.lastSave = FinishedSave()
                var stale: [ObjectID] = []
                var saved: [ObjectID] = []
                // Updated rows the store holds exactly as this save left them (``keepsSavedRow``).
                var kept: [Snapshot] = []
                for id in round.ids {
                    guard let flight = state.inFlight.removeValue(forKey: id) else { continue }
                    guard let pending = flight.pending else {
                        state.lastSave.deleted.insert(id)
                        stale.append(id)
                        saved.append(id)
                        continue
                    }
                    if pending.isInserted { state.lastSave.inserted.insert(id) }
                    guard var layer = state.pending[id] else {
                        // Deleted while saving: the deletion expects the version just saved.
                        stale.append(id)
                        continue
                    }
                    if flight.changeCount == state.changeCount[id, default: 0] {
                        if pending.isInserted {
                            cache.store([layer.snapshot])
                            for (name, list) in layer.toMany { cache.storeToMany(list, of: name, for: id) }
                        } else if let row = Self.savedRow(pending, layer, effects) {
                            kept.append(row)
                        } else if Self.writesRow(pending) || !pending.toMany.isEmpty {
                            stale.append(id)
                        }
                        saved.append(id)
                    } else {
                        layer.insertedInFlight = false
                        state.pending[id] = layer
                        state.failures[id] = nil
                        if !pending.isInserted { stale.append(id) }
                    }
                }
                // Removed first: that moves the cache's generation, so a read that started before
                // this save committed cannot put the row it read over the one kept.
                cache.remove(stale + kept.map(\.objectID))
                cache.store(kept)
                forget(saved, &state)
                if round.metadata != nil && state.metadata == round.metadata { state.metadata = nil }
                regroup(&state)
                return absorb(effects, &state)
            }
        }
        // Pending objects the store changed on its own are read afresh (without the locks) and
        // their changes rebased on what it holds now. A read that fails leaves them as they are:
        // the next save detects a conflict where one of their changed properties moved, as it
        // does for another process's change.
        if !toRebase.isEmpty, let fresh = try? store.snapshots(for: toRebase) { rebasePendingChanges(on: fresh) }
        return reported
    }

    /// The row an update's save left in the store, when the store found the row exactly as it
    /// was read (``SaveEffects/rowsAsRead``, checked in the save's transaction) and changed
    /// nothing of it on its own: the values saved with the version one higher, which is the
    /// layer ``begin(_:metadata:)`` made unless something moved it since. Nil otherwise (the
    /// row is read again when next needed). Updates of to-many lists are read again too (their
    /// lists are kept apart from the row).
    static func savedRow(_ pending: PendingObject, _ layer: PendingObject, _ effects: SaveEffects) -> Snapshot? {
        let id = pending.snapshot.objectID
        guard effects.rowsAsRead.contains(id), !effects.refreshesEverything, !effects.refreshed.contains(id),
            pending.toMany.isEmpty, writesRow(pending)
        else { return nil }
        var row = pending.snapshot
        row.version = pending.original.version + 1
        return layer.snapshot == row && layer.toMany.isEmpty ? row : nil
    }

    /// Puts back the changes of a round the store refused: each object in flight gets the change
    /// it had again, with what was changed since on top (the original it was read as, so the
    /// next save checks the store against that). An insert deleted meanwhile is forgotten: the
    /// store never held it.
    func putBack(_ ids: [ObjectID], _ state: inout State) {
        for id in ids {
            guard let flight = state.inFlight.removeValue(forKey: id), let pending = flight.pending else { continue }
            if var layer = state.pending[id] {
                layer.original = pending.original
                layer.snapshot.version = pending.snapshot.version
                layer.isInserted = pending.isInserted
                layer.insertedInFlight = false
                if pending.isInserted {
                    // The lists the save made up for reads go unless they were set since.
                    for (name, list) in layer.toMany where pending.toMany[name] == nil && list.isEmpty {
                        layer.toMany[name] = nil
                    }
                    layer.originalToMany = [:]
                } else {
                    for (name, list) in pending.originalToMany { layer.originalToMany[name] = list }
                }
                state.pending[id] = layer
            } else if state.deleted[id] != nil {
                if pending.isInserted {
                    forget([id], &state)
                } else {
                    state.deleted[id] = pending.original
                }
            } else {
                state.pending[id] = pending
            }
        }
        regroup(&state)
    }

    // MARK: - Private

    /// The change groups of every pending and deleted object.
    func changeGroups(_ state: inout State) -> [[ObjectID]] {
        var groups: [ObjectID: [ObjectID]] = [:]
        for id in (Array(state.pending.keys) + Array(state.deleted.keys)).sorted() {
            groups[root(of: id, &state), default: []].append(id)
        }
        return groups.values.sorted { $0[0] < $1[0] }
    }

    /// Rebuilds the change groups after objects left them (saved, forgotten): each group keeps
    /// the objects still changed, under one of them.
    func regroup(_ state: inout State) {
        var groups: [ObjectID: [ObjectID]] = [:]
        for id in state.groupParent.keys.sorted() { groups[root(of: id, &state), default: []].append(id) }
        var parents: [ObjectID: ObjectID] = [:]
        for members in groups.values {
            let alive = members.filter { state.pending[$0] != nil || state.deleted[$0] != nil }
            guard let first = alive.first else { continue }
            for member in alive { parents[member] = first }
        }
        state.groupParent = parents
    }

    private func fail(
        _ group: [ObjectID], _ error: ObjectGraphError, _ state: inout State, _ outcome: inout SaveOutcome
    ) {
        for id in group {
            state.failures[id] = Failure(error: error, changeCount: state.changeCount[id, default: 0])
            outcome.failed[id] = error
        }
    }

    /// Drops a group that conflicts: its changes, its failures, and its cached rows.
    private func drop(_ group: [ObjectID], _ error: ObjectGraphError, _ state: inout State) -> [PendingChange] {
        var changes = group.map { describeChange($0, state) }
        for i in changes.indices { changes[i].failure = error }
        forget(group, &state)
        cache.remove(group)
        return changes
    }

    /// Forgets the changes of `group` (their group links stay until ``regroup(_:)``, so the
    /// groups of other objects are not cut).
    private func forget(_ group: [ObjectID], _ state: inout State) {
        for id in group {
            state.pending[id] = nil
            state.deleted[id] = nil
            state.changeCount[id] = nil
            state.failures[id] = nil
        }
    }

    /// The save request for the changes of `ids`.
    private func request(for ids: [ObjectID], metadata: StoreMetadata?, _ state: State) -> SaveRequest {
        var request = SaveRequest()
        for id in ids.sorted() {
            if let pending = state.pending[id] {
                if pending.isInserted {
                    request.inserted.append(pending.snapshot)
                } else {
                    var snapshot = pending.snapshot
                    snapshot.version = pending.original.version
                    request.updated.append(SaveRequest.Update(snapshot: snapshot, original: pending.original))
                }
                for (name, list) in pending.toMany.sorted(by: { $0.key < $1.key }) {
                    let original = pending.originalToMany[name] ?? []
                    guard list != original || pending.isInserted else { continue }
                    request.toManyChanges.append(
                        .init(source: id, relationship: name, destinations: list, original: original))
                }
            } else if let deleted = state.deleted[id] {
                request.deleted.append(SaveRequest.Deletion(objectID: id, expectedVersion: deleted.version))
            }
        }
        request.metadata = metadata
        return request
    }

    private func describeChange(_ id: ObjectID, _ state: State) -> PendingChange {
        if state.deleted[id] != nil {
            return PendingChange(objectID: id, kind: .deleted, failure: state.failures[id]?.error)
        }
        guard let pending = state.pending[id] else { return PendingChange(objectID: id, kind: .updated) }
        var change = PendingChange(
            objectID: id, kind: pending.isInserted ? .inserted : .updated, failure: state.failures[id]?.error)
        if pending.isInserted {
            change.attributes = pending.snapshot.attributes.mapValues { Optional($0) }
            change.toOne = pending.snapshot.toOne.mapValues { Optional($0) }
            change.toMany = pending.toMany.filter { !$0.value.isEmpty }
        } else {
            let update = SaveRequest.Update(snapshot: pending.snapshot, original: pending.original)
            for name in update.changedAttributes { change.attributes[name] = pending.snapshot.attributes[name] }
            for name in update.changedToOne { change.toOne[name] = pending.snapshot.toOne[name] }
            for (name, list) in pending.toMany where list != (pending.originalToMany[name] ?? []) {
                change.toMany[name] = list
            }
        }
        return change
    }

    /// Checks what `id`'s change sets against the model (``ChangeValidation``): every value of
    /// an inserted object; the attributes and relationships an update changes. Returns what
    /// breaks the model among the values it leaves as they were. Called holding ``changeLock``
    /// (a to-many count may fault).
    func validateForSave(_ id: ObjectID) throws(ObjectGraphError) -> [String] {
        guard let pending = state.withLock({ $0.pending[id] }) else { return [] }
        let entity = model[id.entity]
        let object = describe(id)
        let update =
            pending.isInserted ? nil : SaveRequest.Update(snapshot: pending.snapshot, original: pending.original)
        var untouched = try ChangeValidation.checkAttributes(
            of: pending.snapshot, changed: update.map { Set($0.changedAttributes) }, in: entity, object: object)
        let changedToOne = update.map { Set($0.changedToOne) }
        for relationship in entity.persistentRelationships {
            let changed: Bool
            let count: Int
            if relationship.isToMany {
                let list = pending.toMany[relationship.name]
                changed =
                    pending.isInserted || (list != nil && list != (pending.originalToMany[relationship.name] ?? []))
                // One the change leaves as it was is not read for the check: a fault per object saved.
                guard changed else { continue }
                count = try toManyList(relationship.name, id).count
            } else {
                changed = changedToOne?.contains(relationship.name) ?? true
                count = pending.snapshot.toOne[relationship.name] == nil ? 0 : 1
            }
            if let violation = try ChangeValidation.checkRelationship(
                relationship, count: count, changed: changed, of: id, object: object)
            {
                untouched.append(violation)
            }
        }
        return untouched
    }
}
