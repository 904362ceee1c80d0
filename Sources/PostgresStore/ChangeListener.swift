import CoreDataSchema
import Foundation
import Logging
import ObjectGraph
import RelationalCore
import Synchronization

/// Listens for other writers' commits on a connection of its own (LISTEN on the store's
/// channel) and collects which objects they changed, read from the history rows their
/// announcements name, for ``PostgresStore/takeAnnouncedChanges()``.
///
/// When its connection fails it makes a new one (every second until the server answers) and
/// moves ``generation``: announcements sent meanwhile are lost, so whoever holds cached rows
/// must read everything again.
///
/// Threading: its loop runs on a thread of its own; ``take()`` and ``generation`` are safe from
/// any thread.
final class ChangeListener: Sendable {
    private let location: PostgresLocation
    private let layout: StoreLayout
    private let instance: String
    private let logger: Logger
    private let pending = Mutex(AnnouncedChanges())
    private let generationCount = Atomic<Int64>(0)
    private let stopped = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    /// Whether the listening connection is up, announcements heard, and the lag of the last one
    /// that said when it committed (milliseconds), for ``PostgresStore/connectionStatistics``.
    let isConnected = Atomic<Bool>(false)
    let announcements = Atomic<Int>(0)
    let lastLagMilliseconds = Atomic<Int>(-1)
    /// How long one wait for announcements lasts: what `stop()` may take, and how soon a dead
    /// connection is noticed when the socket says nothing.
    static let wait = 0.25

    init(location: PostgresLocation, layout: StoreLayout, instance: String, logger: Logger) {
        self.location = location
        self.layout = layout
        self.instance = instance
        self.logger = logger
        let thread = Thread { [self] in run() }
        thread.name = "storefs-listen"
        thread.start()
    }

    /// Moves at every connection but a first that succeeded at once.
    var generation: Int64 { generationCount.load(ordering: .relaxed) }

    func take() -> AnnouncedChanges {
        pending.withLock { changes in
            defer { changes = AnnouncedChanges() }; return changes
        }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        // Bounded: the loop notices within one wait (or one connect timeout while reconnecting).
        let deadline = Date().addingTimeInterval(Self.wait * 4)
        while !finished.load(ordering: .relaxed) && Date() < deadline { usleep(10_000) }
    }

    private func run() {
        defer { finished.store(true, ordering: .relaxed) }
        var connection: PostgresConnection?
        var connectedBefore = false
        var lastFailure = ""
        // Set while following by polling: the last history transaction read. It survives a
        // reconnection: the history is persistent, so polling resumes where it stopped.
        var polledAfter: Int64?
        // Set while listening: the highest transaction number heard (own commits included), and
        // the newest number the last check found in the history (see ``announcementCheck``).
        var heardUpTo: Int64 = 0
        var checkedNewest: Int64?
        var nextCheck = Date()
        var told = ""
        while !stopped.load(ordering: .relaxed) {
            if connection == nil || connection?.isBroken == true {
                isConnected.store(false, ordering: .relaxed)
                do throws(ObjectGraphError) {
                    let made = try PostgresConnection(location, timeout: location.statementTimeout)
                    // Named for its store's channel, so that `pg_stat_activity` tells which
                    // sessions follow which store whatever statement they ran last.
                    _ = try made.execute("SET application_name TO 'storefs listener \(location.channel)'")
                    var reason = location.followsByPolling ? "follow=poll" : ""
                    // Behind a transaction-mode pooler LISTEN would be accepted on a server
                    // connection this one gives back at once: nothing would be heard.
                    if reason.isEmpty && polledAfter == nil, made.isPooled {
                        reason =
                            "a connection pooler is between it and the server: LISTEN needs a session (session=URL)"
                    }
                    if reason.isEmpty && polledAfter == nil {
                        do throws(ObjectGraphError) {
                            _ = try made.execute("LISTEN \(SQL.identifier(location.channel))")
                            heardUpTo = try newestTransaction(made)
                            checkedNewest = nil
                            nextCheck = Date().addingTimeInterval(Self.announcementCheck)
                        } catch {
                            // A standby ("cannot execute LISTEN during recovery"), a server or a
                            // pooler that refuses it: the history is read instead.
                            if made.isBroken { throw error }
                            reason = error.message
                        }
                    }
                    if !reason.isEmpty && polledAfter == nil { polledAfter = try newestTransaction(made) }
                    let way =
                        polledAfter == nil
                        ? "by LISTEN on channel \(location.channel)"
                        : "by reading its history every \(Int((location.pollInterval * 1000).rounded())) ms"
                    if way != told {
                        logger.info(
                            "\(location): follows other mounts' commits \(way)\(reason.isEmpty ? "" : " (\(reason))")")
                        told = way
                    }
                    connection = made
                    isConnected.store(true, ordering: .relaxed)
                    // A first connection that took several tries may have missed commits too.
                    if connectedBefore || !lastFailure.isEmpty {
                        generationCount.add(1, ordering: .relaxed)
                        logger.notice("\(location): reconnected for announcements; cached objects are read again")
                    }
                    connectedBefore = true
                    lastFailure = ""
                } catch {
                    connection = nil
                    if error.message != lastFailure {
                        logger.error("\(error.message); announcements resume once it answers")
                    }
                    lastFailure = error.message
                    for _ in 0..<4 where !stopped.load(ordering: .relaxed) { usleep(250_000) }
                    continue
                }
            }
            guard let current = connection else { continue }
            if let after = polledAfter {
                do throws(ObjectGraphError) {
                    polledAfter = try poll(after: after, current)
                } catch {
                    logger.warning("\(error.message)")
                    connection = nil
                }
                // Sleeps in slices of at most ``wait``, so that stop() is quick.
                var left = location.pollInterval
                while left > 0 && !stopped.load(ordering: .relaxed) {
                    usleep(UInt32(min(left, Self.wait) * 1_000_000))
                    left -= Self.wait
                }
                continue
            }
            do throws(ObjectGraphError) {
                let notices = try current.notifications(waiting: Self.wait)
                var numbers: [Int64] = []
                var listed = AnnouncedChanges()
                for notice in notices {
                    let words = notice.payload.split(separator: " ")
                    if let number = Int64(words.first ?? "") { heardUpTo = max(heardUpTo, number) }
                    // The writer's instance, and when it committed (`UUID@seconds`, PostgresStore+History.swift).
                    let writer = words.count >= 2 ? words[1].split(separator: "@", maxSplits: 1) : []
                    guard let number = Int64(words.first ?? ""), let sender = writer.first, sender != instance else {
                        continue
                    }
                    noteAnnouncement(committed: writer.count == 2 ? Double(writer[1]) : nil)
                    if words.count == 3, let objects = parse(words[2]) {
                        listed.formUnion(objects)
                    } else {
                        numbers.append(number)
                    }
                }
                if !listed.isEmpty { pending.withLock { $0.formUnion(listed) } }
                if !numbers.isEmpty { try collect(numbers, current) }
                if Date() >= nextCheck {
                    nextCheck = Date().addingTimeInterval(Self.announcementCheck)
                    let newest = try newestTransaction(current)
                    if let checked = checkedNewest, heardUpTo < checked {
                        // LISTEN was accepted but announcements do not arrive (a pooler in
                        // transaction mode passes LISTEN to a server connection this one no
                        // longer holds): the history is followed from what was heard, and what
                        // is cached is read again, since some announcements were lost.
                        logger.warning(
                            "\(location): commits up to \(checked) were not announced (only \(heardUpTo) heard): LISTEN does not reach this connection"
                        )
                        polledAfter = heardUpTo
                        generationCount.add(1, ordering: .relaxed)
                        told = "by reading its history every \(Int((location.pollInterval * 1000).rounded())) ms"
                        logger.info("\(location): follows other mounts' commits \(told)")
                        continue
                    }
                    checkedNewest = newest
                }
            } catch {
                logger.warning("\(error.message)")
                connection = nil
            }
        }
    }

    /// Seconds between checks, while listening, that every commit in the history was announced:
    /// a commit found at one check and still not heard at the next was lost on the way.
    static let announcementCheck = 5.0

    /// The number of the newest history transaction (0 when there is none).
    private func newestTransaction(_ connection: PostgresConnection) throws(ObjectGraphError) -> Int64 {
        let rows = try connection.execute("SELECT COALESCE(MAX(\"Z_PK\"), 0) FROM \"ATRANSACTION\"")
        return rows.integer(0, 0) ?? 0
    }

    /// Counts an announcement and, when its writer said when it committed (seconds since 2001),
    /// how long it took to arrive (clocks of two machines: negative lag is counted as none).
    private func noteAnnouncement(committed: Double?) {
        announcements.add(1, ordering: .relaxed)
        guard let committed, committed.isFinite else { return }
        let lag = max(0, Date().timeIntervalSinceReferenceDate - committed)
        lastLagMilliseconds.store(Int(min(lag, 86_400) * 1000), ordering: .relaxed)
    }

    /// The objects an announcement lists (`ZENT.KEY.KIND,...`, kind 0 insert, 1 update, 2
    /// delete); nil when it does not read so (the history rows are read instead).
    private func parse(_ list: Substring) -> AnnouncedChanges? {
        var changes = AnnouncedChanges()
        for entry in list.split(separator: ",") {
            let parts = entry.split(separator: ".")
            guard parts.count == 3, let zent = Int64(parts[0]), let key = Int64(parts[1]), key > 0,
                let kind = Int(parts[2]),
                let entity = layout.entityByZent[zent]
            else { return nil }
            let id = ObjectID(entity: entity, key: PrimaryKey(key))
            changes.changed.insert(id)
            if kind != 1 { changes.insertedOrDeleted.insert(id) }
        }
        return changes
    }

    /// Transactions one poll reads at most: a follower far behind catches up in steps, each
    /// bounded.
    static let pollBatch: Int64 = 1000

    /// Adds the changes of the history transactions after `after` (up to ``pollBatch`` of them);
    /// returns the last transaction read.
    ///
    /// Nothing is skipped: a save takes its transaction number by updating Z_PRIMARYKEY's row,
    /// whose lock it holds until it commits (PostgresStore+History.swift), so transaction N+1
    /// cannot take its number before N has committed or rolled back (and a rollback gives its
    /// number back). Every number up to the newest found is therefore committed, and visible to
    /// the statement that follows, on the primary as on a standby that replays commits in order.
    private func poll(after: Int64, _ connection: PostgresConnection) throws(ObjectGraphError) -> Int64 {
        let newest = try newestTransaction(connection)
        guard newest > after else { return after }
        let last = min(newest, after + Self.pollBatch)
        let rows = try connection.execute(
            "SELECT \"ZCHANGETYPE\", \"ZENTITY\", \"ZENTITYPK\" FROM \"ACHANGE\" WHERE \"ZTRANSACTIONID\" > $1 AND \"ZTRANSACTIONID\" <= $2",
            [String(after), String(last)])
        var changes = AnnouncedChanges()
        for row in 0..<rows.rowCount {
            guard let kind = rows.integer(row, 0), let zent = rows.integer(row, 1),
                let entity = layout.entityByZent[zent], let key = rows.integer(row, 2), key > 0
            else { continue }
            let id = ObjectID(entity: entity, key: PrimaryKey(key))
            changes.changed.insert(id)
            if kind != 1 { changes.insertedOrDeleted.insert(id) }
        }
        if !changes.isEmpty { pending.withLock { $0.formUnion(changes) } }
        return last
    }

    /// Reads the changes of history transactions `numbers` and adds them to what ``take()`` gives.
    private func collect(_ numbers: [Int64], _ connection: PostgresConnection) throws(ObjectGraphError) {
        let rows = try connection.execute(
            "SELECT \"ZCHANGETYPE\", \"ZENTITY\", \"ZENTITYPK\" FROM \"ACHANGE\" WHERE \"ZTRANSACTIONID\" = ANY($1::bigint[])",
            [PostgresDialect.array(numbers)])
        var changes = AnnouncedChanges()
        for row in 0..<rows.rowCount {
            guard let kind = rows.integer(row, 0), let zent = rows.integer(row, 1),
                let entity = layout.entityByZent[zent],
                let key = rows.integer(row, 2), key > 0
            else { continue }
            let id = ObjectID(entity: entity, key: PrimaryKey(key))
            changes.changed.insert(id)
            if kind != 1 { changes.insertedOrDeleted.insert(id) }
        }
        pending.withLock { $0.formUnion(changes) }
    }
}
