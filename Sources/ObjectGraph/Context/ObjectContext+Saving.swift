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
        state.withLock { !$0.pending.isEmpty || !$0.deleted.isEmpty || $0.metadata != nil }
    }

    /// Validates every changed object and writes all changes as one transaction. On failure
    /// nothing is written and the changes stay pending (fix them, or ``rollback()``).
    ///
    /// - Throws: ``ObjectGraphError/Code/validation`` naming the object and property;
    ///   ``ObjectGraphError/Code/conflict`` when another context or process changed what one of
    ///   the changed objects changes since this context read it.
    public func save() throws(ObjectGraphError) {
        try state.withLock { (state) throws(ObjectGraphError) in
            guard !state.pending.isEmpty || !state.deleted.isEmpty || state.metadata != nil else { return }
            let all = Array(state.pending.keys) + Array(state.deleted.keys)
            for id in all.sorted() where state.pending[id] != nil {
                _ = try validateForSave(id, &state)
            }
            let effects = try store.saveReportingEffects(request(for: all, metadata: state.metadata, &state))
            didSave(all, &state)
            absorb(effects, &state)
            state.metadata = nil
        }
    }

    /// Saves every change group that can be saved and leaves the rest pending: one transaction
    /// for all valid groups; a group the store refuses (naming its object) is taken out and the
    /// rest is tried again. Groups with an object in `held` are not tried (the filesystem holds
    /// objects a copy is still filling), nor groups that failed and did not change since.
    ///
    /// A group that conflicts with another process's change is dropped (see
    /// ``SaveOutcome/conflicts``); every other failure leaves its group pending.
    public func save(holding held: Set<ObjectID> = []) -> SaveOutcome {
        state.withLock { state in
            var outcome = SaveOutcome()
            var groups = changeGroups(&state).filter { group in
                guard !group.contains(where: held.contains) else { return false }
                // A group that failed and did not change since would fail the same way.
                return !group.allSatisfy { id in
                    guard let failure = state.failures[id] else { return false }
                    // A failure of the store (the disk, the network, room on the disk) may go away.
                    return failure.changeCount == state.changeCount[id, default: 0] && failure.error.code != .io
                        && failure.error.code != .noSpace
                }
            }
            var untouched: [ObjectID: [String]] = [:]
            groups = groups.filter { group in
                for id in group where state.pending[id] != nil {
                    do throws(ObjectGraphError) {
                        let violations = try validateForSave(id, &state)
                        if !violations.isEmpty { untouched[id] = violations }
                    } catch {
                        fail(group, error, &state, &outcome)
                        return false
                    }
                }
                return true
            }
            let metadata = state.metadata
            // Each round either saves everything left or takes out at least one group.
            while !groups.isEmpty || metadata != nil {
                let ids = groups.flatMap { $0 }
                let request: SaveRequest
                do throws(ObjectGraphError) {
                    request = try self.request(for: ids, metadata: metadata, &state)
                } catch {
                    for group in groups { fail(group, error, &state, &outcome) }
                    outcome.storeError = error
                    break
                }
                do throws(ObjectGraphError) {
                    let effects = try store.saveReportingEffects(request)
                    didSave(ids, &state)
                    outcome.storeEffects = absorb(effects, &state)
                    outcome.saved += ids
                    if metadata != nil {
                        state.metadata = nil
                        outcome.savedMetadata = true
                    }
                    break
                } catch {
                    let culprits = Set(error.objects)
                    let refused = groups.filter { $0.contains(where: culprits.contains) }
                    guard !refused.isEmpty else {
                        if groups.count > 1, Self.mayBeAboutOneGroup(error) {
                            // A refusal that names no object (an SQLite UNIQUE index, a trigger):
                            // the batch is split until the groups at fault are found; the others
                            // are saved.
                            saveApart(groups, metadata: metadata, &state, &outcome)
                            break
                        }
                        // Not about any object (the disk, a lock): nothing was saved.
                        for group in groups { fail(group, error, &state, &outcome) }
                        outcome.storeError = error
                        break
                    }
                    for group in refused {
                        if error.code == .conflict {
                            outcome.conflicts += drop(group, error, &state)
                        } else {
                            fail(group, error, &state, &outcome)
                        }
                    }
                    groups.removeAll { $0.contains(where: culprits.contains) }
                }
            }
            let saved = Set(outcome.saved)
            outcome.untouchedViolations = untouched.filter { saved.contains($0.key) }
            return outcome
        }
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
    private func saveApart(
        _ groups: [[ObjectID]], metadata: StoreMetadata?, _ state: inout State, _ outcome: inout SaveOutcome
    ) {
        var pendingMetadata = metadata
        var work: [[[ObjectID]]] = [Array(groups[..<(groups.count / 2)]), Array(groups[(groups.count / 2)...])]
        while let part = work.popLast() {
            guard !part.isEmpty else { continue }
            let ids = part.flatMap { $0 }
            do throws(ObjectGraphError) {
                let request = try self.request(for: ids, metadata: pendingMetadata, &state)
                let effects = try store.saveReportingEffects(request)
                didSave(ids, &state)
                let absorbed = absorb(effects, &state)
                outcome.storeEffects.refreshed.formUnion(absorbed.refreshed)
                outcome.storeEffects.refreshesEverything =
                    outcome.storeEffects.refreshesEverything || absorbed.refreshesEverything
                outcome.saved += ids
                if pendingMetadata != nil {
                    state.metadata = nil
                    outcome.savedMetadata = true
                    pendingMetadata = nil
                }
            } catch {
                if part.count == 1 || !Self.mayBeAboutOneGroup(error) {
                    for group in part {
                        if error.code == .conflict {
                            outcome.conflicts += drop(group, error, &state)
                        } else {
                            fail(group, error, &state, &outcome)
                        }
                    }
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

    /// Discards every unsaved change.
    public func rollback() {
        state.withLock { state in
            state.pending = [:]
            state.deleted = [:]
            state.metadata = nil
            state.groupParent = [:]
            state.changeCount = [:]
            state.failures = [:]
        }
    }

    /// Discards the unsaved changes of every object changed together with one of `ids` (their
    /// whole groups, so no half of a relationship stays): what an error reported to a writer
    /// promised would never be applied. Returns the objects whose changes were discarded.
    @discardableResult
    public func discardChanges(of ids: [ObjectID]) -> [ObjectID] {
        state.withLock { state in
            var discarded: [ObjectID] = []
            for group in changeGroups(&state) where group.contains(where: ids.contains) {
                discarded += group
                forget(group, &state)
            }
            return discarded
        }
    }

    /// Sets attribute `name` of `id` back to the value the store holds, if it still is `value`
    /// (another change may have set it since): takes back one write that a writer was told failed.
    /// The object's other changes stay pending; when it has none left, nor any object changed
    /// with it, nothing of them is pending any more (no failure to report, nothing for a
    /// recovery file).
    public func revert(_ name: String, of id: ObjectID, ifStill value: AttributeValue?) {
        state.withLock { state in
            guard var pending = state.pending[id], pending.snapshot.attributes[name] == value else { return }
            if pending.isInserted {
                pending.snapshot.attributes[name] = model[id.entity].attribute(named: name)?.defaultValue
            } else {
                pending.snapshot.attributes[name] = pending.original.attributes[name]
            }
            state.pending[id] = pending
            state.changeCount[id, default: 0] += 1
            forgetGroupIfUnchanged(of: id, &state)
        }
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
        state.withLock { state in rebase(on: fresh, &state) }
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

    // MARK: - Private

    /// The change groups of every pending and deleted object.
    func changeGroups(_ state: inout State) -> [[ObjectID]] {
        var groups: [ObjectID: [ObjectID]] = [:]
        for id in (Array(state.pending.keys) + Array(state.deleted.keys)).sorted() {
            groups[root(of: id, &state), default: []].append(id)
        }
        return groups.values.sorted { $0[0] < $1[0] }
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

    private func forget(_ group: [ObjectID], _ state: inout State) {
        for id in group {
            state.pending[id] = nil
            state.deleted[id] = nil
            state.groupParent[id] = nil
            state.changeCount[id] = nil
            state.failures[id] = nil
        }
    }

    /// The save request for the changes of `ids`.
    private func request(for ids: [ObjectID], metadata: StoreMetadata?, _ state: inout State) throws(ObjectGraphError)
        -> SaveRequest
    {
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

    /// Moves what a save wrote into the row cache and forgets it as pending. Updated objects are
    /// read again when next needed: another process may have changed what this save left alone.
    private func didSave(_ ids: [ObjectID], _ state: inout State) {
        state.saves += 1
        var stale = ids.filter { state.deleted[$0] != nil }
        for id in ids {
            guard let pending = state.pending[id] else { continue }
            if pending.isInserted {
                var snapshot = pending.snapshot
                snapshot.version = 1
                cache.store([snapshot])
                for (name, list) in pending.toMany { cache.storeToMany(list, of: name, for: id) }
            } else if !SaveRequest.Update(snapshot: pending.snapshot, original: pending.original).isEmpty
                || !pending.toMany.isEmpty
            {
                stale.append(id)
            }
        }
        cache.remove(stale)
        forget(ids, &state)
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
    /// breaks the model among the values it leaves as they were.
    func validateForSave(_ id: ObjectID, _ state: inout State) throws(ObjectGraphError) -> [String] {
        guard let pending = state.pending[id] else { return [] }
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
                count = try toManyLocked(relationship.name, id, &state).count
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
