import CoreDataSchema
import Foundation
import ObjectGraph

extension PostgresStore {
    /// Rows per multi-row INSERT: large enough that a migration is not one round trip per row,
    /// small enough that one statement stays a few megabytes.
    static let rowsPerStatement = 500

    public func save(_ request: SaveRequest) throws(ObjectGraphError) {
        _ = try saveReportingEffects(request)
    }

    /// Applies a save as one transaction on the store's write connection: inserts, updates (the
    /// rows locked and checked property by property against what was read), deletes (checked
    /// against Z_OPT), to-many differences, metadata, one history transaction, and a NOTIFY that
    /// PostgreSQL delivers when, and only when, the transaction commits.
    ///
    /// A connection lost while COMMIT was on its way leaves the outcome unknown to the client: a
    /// new connection learns it (``outcome(of:)``) before the save answers, so EIO always means
    /// "not saved". Any other failure rolls back everything.
    public func saveReportingEffects(_ request: SaveRequest) throws(ObjectGraphError) -> SaveEffects {
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(location) is open read-only") }
        guard !request.isEmpty else { return SaveEffects() }
        try checkOpen()
        return try writer.withLock { (kept) throws(ObjectGraphError) -> SaveEffects in
            if kept == nil || kept?.isBroken == true {
                kept = try PostgresConnection(location, timeout: location.statementTimeout)
            }
            guard var connection = kept else { throw ObjectGraphError(.io, "\(location): no connection") }
            // A kept connection may have died with a server restarted since the last save; that
            // shows only when it is used. Nothing was sent yet: BEGIN again on a new one.
            do throws(ObjectGraphError) {
                try run(connection, "BEGIN")
            } catch  where connection.isBroken {
                connection = try PostgresConnection(location, timeout: location.statementTimeout)
                kept = connection
                try run(connection, "BEGIN")
            }
            var written = WrittenChanges<String?>()
            var number: Int64?
            var transaction: String?
            let timestamp = Date()
            var committing = false
            do throws(ObjectGraphError) {
                // The transaction's id, for learning its outcome if COMMIT's answer is lost.
                transaction = try run(connection, "SELECT txid_current()").text(0, 0)
                // A large save (a migration, a big copy) works between its statements for longer
                // than a vanished client should hold locks (PostgresConnection.idleInTransactionTimeout).
                if request.inserted.count + request.updated.count + request.deleted.count + request.toManyChanges.count
                    > Self.largeSave
                {
                    try run(connection, "SET LOCAL idle_in_transaction_session_timeout TO \(Self.largeSaveIdleTimeout)")
                }
                number = try apply(request, connection, &written, at: timestamp)
                committing = true
                if let hook = beforeCommit.withLock({ $0 }) { hook(connection.serverProcess) }
                try run(connection, "COMMIT")
            } catch {
                if !connection.isBroken {
                    _ = try? connection.execute("ROLLBACK")
                    throw error
                }
                kept = nil
                pool.dropIdle()
                guard committing, let transaction else { throw error }
                let lost = LostCommit(
                    transaction: transaction, serverProcess: connection.serverProcess, history: number,
                    timestamp: String(timestamp.timeIntervalSinceReferenceDate))
                guard try outcome(of: lost, error) else {
                    logger.notice(
                        "\(location): the connection was lost at COMMIT; transaction \(transaction) did not commit: \(error.message)"
                    )
                    throw error
                }
                logger.notice(
                    "\(location): the connection was lost at COMMIT; transaction \(transaction) committed (history \(number.map(String.init) ?? "none"))"
                )
            }
            var refreshed = written.repaired
            for (id, _) in written.deleted { refreshed.remove(id) }
            return SaveEffects(refreshed: refreshed)
        }
    }

    /// A transaction whose COMMIT was sent and whose answer was lost.
    struct LostCommit {
        /// `txid_current()` inside it: 64 bits, never reused while the server runs on.
        var transaction: String
        /// The server process that ran it (stopped from a new connection if it still holds it).
        var serverProcess: Int32
        /// Its history transaction's number (nil for a save of metadata alone) and ZTIMESTAMP:
        /// together they name its ATRANSACTION row even after a crash, when the server may hand out
        /// the same transaction id and history number again to someone else.
        var history: Int64?
        var timestamp: String
    }

    /// Whether a transaction whose COMMIT lost its answer committed, asked on new connections
    /// again and again until the server says (a restart takes seconds), for at most
    /// ``outcomeWait``: EIO must mean "not saved", so the answer is learnt rather than guessed.
    ///
    /// "Not there yet" is not "not committed": a COMMIT still on its way (a network that held it,
    /// a server process that was stalled) may land after the first look. So the transaction must
    /// first be over: while the server says it is in progress, its process is told to end
    /// (`pg_terminate_backend`, which a COMMIT already under way outlives) and it is asked again.
    /// Once it is over, its history row says whether it committed; a save without history
    /// (metadata alone) takes `txid_status`'s word.
    ///
    /// - Throws: EIO when the server did not answer within ``outcomeWait``; the message and the
    ///   log say that whether the save committed is unknown.
    func outcome(of lost: LostCommit, _ failure: ObjectGraphError) throws(ObjectGraphError) -> Bool {
        let deadline = Date().addingTimeInterval(Self.outcomeWait)
        // Low 32 bits: the transaction id as pg_stat_activity shows it.
        let shortID = Int64(lost.transaction).map { String($0 & 0xFFFF_FFFF) } ?? ""
        var last = failure.message
        var committedWithoutRow = 0
        repeat {
            do throws(ObjectGraphError) {
                // An id from the one handed out now on was not handed out before: a crash forgot it.
                let status =
                    try read(
                        "SELECT CASE WHEN $1::bigint >= txid_current() THEN 'forgotten' ELSE txid_status($1::bigint) END",
                        [lost.transaction]
                    ).text(0, 0) ?? "unknown"
                if status == "in progress" {
                    _ = try read(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND backend_xid::text = $2",
                        [String(lost.serverProcess), shortID])
                    last = "transaction \(lost.transaction) was still in progress on the server"
                    usleep(100_000)
                    continue
                }
                guard let number = lost.history else {
                    if status == "committed" { return true }
                    if status == "aborted" || status == "forgotten" { return false }
                    last = "the server no longer knows transaction \(lost.transaction) (\(status))"
                    usleep(250_000)
                    continue
                }
                let found =
                    try read(
                        "SELECT 1 FROM \"ATRANSACTION\" WHERE \"Z_PK\" = $1 AND \"ZTIMESTAMP\" = $2::double precision",
                        [String(number), lost.timestamp]
                    ).rowCount > 0
                if found { return true }
                // Committed in the commit log a moment before its rows show to new snapshots; or
                // the id went to another transaction after a crash: then its row never shows.
                guard status == "committed", committedWithoutRow < 4 else { return false }
                committedWithoutRow += 1
                usleep(50_000)
            } catch {
                last = error.message
                pool.dropIdle()
                usleep(250_000)
            }
        } while Date() < deadline
        logger.critical(
            "\(location): a commit's outcome is unknown: the connection was lost while committing and the server did not say within \(Int(Self.outcomeWait)) s whether transaction \(lost.transaction) committed (\(last))"
        )
        throw ObjectGraphError(
            .io,
            "\(location): the connection was lost while committing and the server did not say within \(Int(Self.outcomeWait)) s "
                + "whether transaction \(lost.transaction) committed: the change may be in the store (\(last))")
    }

    /// How long a save whose COMMIT lost its answer waits for the server to say whether it
    /// committed: longer than a server restart, shorter than anyone waits for an fsync.
    static let outcomeWait: Double = 60

    /// Changes above which a save is large: its transaction may sit idle between statements
    /// while storefs builds the next ones (measured: over 10 s in a 100,000-object migration on a
    /// loaded machine, debug build), up to ``largeSaveIdleTimeout`` ms.
    static let largeSave = 2_000
    static let largeSaveIdleTimeout = 600_000

    @discardableResult
    func run(_ connection: PostgresConnection, _ sql: String, _ parameters: [String?] = []) throws(ObjectGraphError)
        -> PostgresResult
    {
        requests.add(1, ordering: .relaxed)
        return try connection.execute(sql, parameters)
    }

    /// Everything of one save inside its transaction; returns the history transaction's number.
    private func apply(
        _ request: SaveRequest, _ connection: PostgresConnection, _ written: inout WrittenChanges<String?>,
        at timestamp: Date
    )
        throws(ObjectGraphError) -> Int64?
    {
        func run(_ sql: String, _ parameters: [String?] = []) throws(ObjectGraphError) -> PostgresResult {
            try self.run(connection, sql, parameters)
        }
        try insert(request, run: run, &written)
        let updates = request.updated.filter { !$0.isEmpty }.sorted { $0.objectID < $1.objectID }
        if !updates.isEmpty {
            var current: [ObjectID: Snapshot] = [:]
            for snapshot in try readSnapshots(for: updates.map(\.objectID), forUpdate: true, run) {
                current[snapshot.objectID] = snapshot
            }
            for update in updates {
                guard let stored = current[update.objectID] else { throw conflict(update.objectID, deleted: true) }
                let changedAttributes = update.changedAttributes
                let changedToOne = update.changedToOne
                if changedAttributes.contains(where: { stored.attributes[$0] != update.original.attributes[$0] })
                    || changedToOne.contains(where: { stored.toOne[$0] != update.original.toOne[$0] })
                {
                    throw conflict(update.objectID, deleted: false)
                }
                let (table, zent, _) = try place(of: update.objectID)
                let columns = try rowColumns(
                    of: update.snapshot, attributes: Set(changedAttributes), toOne: Set(changedToOne))
                var sets = columns.enumerated().map { "\(SQLText.identifier($0.element.name)) = $\($0.offset + 3)" }
                sets.append("\"Z_OPT\" = \"Z_OPT\" + 1")
                let changed = try run(
                    "UPDATE \(SQLText.identifier(table)) SET \(sets.joined(separator: ", ")) WHERE \"Z_PK\" = $1 AND \"Z_ENT\" = $2",
                    [String(update.objectID.key.rawValue), String(zent)] + columns.map(\.value))
                if changed.changedCount == 0 { throw conflict(update.objectID, deleted: true) }
                written.update(update.objectID, changedAttributes + changedToOne)
            }
            try repairOneToOne(updates, run: run, &written)
        }
        try bumpVersionsOfToManyChanges(request, run: run, &written)
        for deletion in request.deleted.sorted(by: { $0.objectID < $1.objectID }) {
            let (table, zent, _) = try place(of: deletion.objectID)
            let key = String(deletion.objectID.key.rawValue)
            let tombstone = try tombstoneValues(of: deletion.objectID, run: run)
            let changed = try run(
                "DELETE FROM \(SQLText.identifier(table)) WHERE \"Z_PK\" = $1 AND \"Z_ENT\" = $2 AND \"Z_OPT\" = $3",
                [key, String(zent), String(deletion.expectedVersion)])
            if changed.changedCount == 0 {
                let exists =
                    try run("SELECT 1 FROM \(SQLText.identifier(table)) WHERE \"Z_PK\" = $1", [key]).rowCount > 0
                throw conflict(deletion.objectID, deleted: !exists)
            }
            let root = layout[deletion.objectID.entity].rootID
            for join in layout.joinTables where join.root == root {
                _ = try run(
                    "DELETE FROM \(SQLText.identifier(join.table)) WHERE \(SQLText.identifier(join.column)) = $1", [key]
                )
            }
            for hidden in layout.hiddenKeyColumns where hidden.root == root {
                let c = SQLText.identifier(hidden.column)
                let order = hidden.orderColumn.map { ", \(SQLText.identifier($0)) = NULL" } ?? ""
                _ = try run("UPDATE \(SQLText.identifier(hidden.table)) SET \(c) = NULL\(order) WHERE \(c) = $1", [key])
            }
            written.deleted.append((deletion.objectID, tombstone))
        }
        try clearKeys(to: request.deleted.map(\.objectID), run: run, &written)
        try applyToManyChanges(
            request.toManyChanges, run: run, insertedOrders: InsertedOrders(request, layout: layout, model: model))
        if let metadata = request.metadata {
            let plist = try MetadataPlist.encode(metadata)
            _ = try run(
                "UPDATE \"Z_METADATA\" SET \"Z_UUID\" = COALESCE($1, \"Z_UUID\"), \"Z_PLIST\" = $2",
                [metadata.storeUUID, PostgresValueCoding.hex(plist)])
        }
        return try appendHistory(written, at: timestamp, run: run)
    }

    // MARK: - Inserts

    /// Multi-row INSERTs per table and set of columns; keys another writer saved meanwhile are
    /// refused by name (EEXIST for the objects that have them).
    private func insert(
        _ request: SaveRequest, run: (String, [String?]) throws(ObjectGraphError) -> PostgresResult,
        _ written: inout WrittenChanges<String?>
    ) throws(ObjectGraphError) {
        guard !request.inserted.isEmpty else { return }
        let orders = InsertedOrders(request, layout: layout, model: model)
        struct Group {
            var table: String
            var columns: [String]
            var rows: [String] = []
        }
        var groups: [String: Group] = [:]
        var keysByTable: [String: [Int64: ObjectID]] = [:]
        var maxKeys: [Int64: Int64] = [:]
        for snapshot in request.inserted {
            let (table, zent, rootZent) = try place(of: snapshot.objectID)
            var columns = try rowColumns(of: snapshot)
            for column in orders.columnsByTable[table] ?? [] {
                if let place = orders.place(of: snapshot.objectID, in: column) {
                    columns.append((column, String(place)))
                }
            }
            let names = columns.map(\.name)
            let shape = table + "\u{1}" + names.joined(separator: "\u{1}")
            let values =
                [String(snapshot.objectID.key.rawValue), String(zent), "1"]
                + columns.map { $0.value.flatMap(SQLText.literal) ?? "NULL" }
            groups[shape, default: Group(table: table, columns: names)].rows.append(
                "(" + values.joined(separator: ", ") + ")")
            if keysByTable[table, default: [:]].updateValue(snapshot.objectID, forKey: snapshot.objectID.key.rawValue)
                != nil
            {
                throw ObjectGraphError(
                    .exists, "\(name(of: snapshot.objectID)) is inserted twice by one save",
                    objects: [snapshot.objectID])
            }
            maxKeys[rootZent] = max(maxKeys[rootZent] ?? 0, snapshot.objectID.key.rawValue)
            written.insert(snapshot.objectID)
        }
        for (table, keys) in keysByTable.sorted(by: { $0.key < $1.key }) {
            let taken = try run(
                "SELECT \"Z_PK\" FROM \(SQLText.identifier(table)) WHERE \"Z_PK\" = ANY($1::bigint[])",
                [SQLText.array(keys.keys.sorted())])
            let objects = (0..<taken.rowCount).compactMap { taken.integer($0, 0).flatMap { keys[$0] } }
            if let first = objects.first {
                throw ObjectGraphError(
                    .exists, "\(name(of: first)) cannot be inserted: another writer saved an object with its key",
                    objects: objects)
            }
        }
        for (_, group) in groups.sorted(by: { $0.key < $1.key }) {
            let names = (["Z_PK", "Z_ENT", "Z_OPT"] + group.columns).map(SQLText.identifier).joined(separator: ", ")
            var start = 0
            while start < group.rows.count {
                let end = min(start + Self.rowsPerStatement, group.rows.count)
                _ = try run(
                    "INSERT INTO \(SQLText.identifier(group.table)) (\(names)) VALUES \(group.rows[start..<end].joined(separator: ", "))",
                    [])
                start = end
            }
        }
        for (rootZent, key) in maxKeys.sorted(by: { $0.key < $1.key }) {
            _ = try run(
                "UPDATE \"Z_PRIMARYKEY\" SET \"Z_MAX\" = GREATEST(COALESCE(\"Z_MAX\", 0), $2) WHERE \"Z_ENT\" = $1",
                [String(rootZent), String(key)])
        }
    }

    /// The columns of a snapshot's row with their text values: every mapped column (a missing
    /// name writes NULL), or only those of the given attributes and to-one relationships.
    func rowColumns(of snapshot: Snapshot, attributes only: Set<String>? = nil, toOne onlyToOne: Set<String>? = nil)
        throws(ObjectGraphError) -> [(name: String, value: String?)]
    {
        let id = snapshot.objectID
        let entityLayout = layout[id.entity]
        var columns: [(name: String, value: String?)] = []
        var found = 0
        for attribute in entityLayout.attributes {
            let name = attribute.attribute.name
            let value = snapshot.attributes[name]
            if value != nil { found += 1 }
            if let only, !only.contains(name) { continue }
            guard let column = attribute.column else { continue }
            do {
                columns.append(
                    (column, try PostgresValueCoding.encode(value, as: attribute.attribute, entity: entityLayout.name)))
            } catch {
                throw ObjectGraphError(error.code, error.message, objects: [id])
            }
        }
        if found != snapshot.attributes.count {
            for name in snapshot.attributes.keys
            where !entityLayout.attributes.contains(where: { $0.attribute.name == name }) {
                if model[id.entity].attribute(named: name)?.isTransient == true { continue }
                throw ObjectGraphError(.notFound, "entity \(entityLayout.name) has no attribute \(name)", objects: [id])
            }
        }
        for toOne in entityLayout.toOne where onlyToOne?.contains(toOne.name) ?? true {
            guard let column = toOne.column else { continue }
            let destination = snapshot.toOne[toOne.name]
            columns.append((column, destination.map { String($0.key.rawValue) }))
            if let entityColumn = toOne.entityColumn {
                columns.append((entityColumn, destination.flatMap { layout[$0.entity].zent }.map { String($0) }))
            }
        }
        return columns
    }

    // MARK: - Places and errors

    /// Table, Z_ENT and root Z_ENT of an object to write.
    func place(of id: ObjectID) throws(ObjectGraphError) -> (String, Int64, Int64) {
        try layout.place(of: id, in: location.description)
    }

    func name(of id: ObjectID) -> String { "\(layout[id.entity].name) p\(id.key.rawValue)" }

    func conflict(_ id: ObjectID, deleted: Bool) -> ObjectGraphError {
        ObjectGraphError(
            .conflict,
            "\(name(of: id)) was \(deleted ? "deleted" : "changed") in \(location) by another writer since it was read; "
                + "that change is kept and this one is not saved",
            objects: [id])
    }
}
