import CoreDataSchema
import Foundation
import Logging
import ObjectGraph
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
        // A hot standby refuses LISTEN: there the history is read every half second instead,
        // from the last transaction seen.
        var polledAfter: Int64?
        while !stopped.load(ordering: .relaxed) {
            if connection == nil || connection?.isBroken == true {
                isConnected.store(false, ordering: .relaxed)
                do throws(ObjectGraphError) {
                    let made = try PostgresConnection(location, timeout: location.statementTimeout)
                    do throws(ObjectGraphError) {
                        _ = try made.execute("LISTEN \(SQLText.identifier(location.channel))")
                        polledAfter = nil
                    } catch  where error.code == .readOnly {
                        let last = try made.execute("SELECT COALESCE(MAX(\"Z_PK\"), 0) FROM \"ATRANSACTION\"")
                        polledAfter = last.integer(0, 0) ?? 0
                        if !connectedBefore {
                            logger.info(
                                "\(location) is a standby (no LISTEN there): its history is read every \(Self.pollInterval) s"
                            )
                        }
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
                for _ in 0..<Int(Self.pollInterval / Self.wait) where !stopped.load(ordering: .relaxed) {
                    usleep(UInt32(Self.wait * 1_000_000))
                }
                continue
            }
            do throws(ObjectGraphError) {
                let notices = try current.notifications(waiting: Self.wait)
                var numbers: [Int64] = []
                var listed = AnnouncedChanges()
                for notice in notices {
                    let words = notice.payload.split(separator: " ")
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
            } catch {
                logger.warning("\(error.message)")
                connection = nil
            }
        }
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

    /// Seconds between reads of the history on a standby.
    static let pollInterval = 0.5

    /// Adds the changes of every history transaction after `after` (a standby's way of hearing
    /// of commits); returns the last transaction seen.
    private func poll(after: Int64, _ connection: PostgresConnection) throws(ObjectGraphError) -> Int64 {
        let rows = try connection.execute(
            "SELECT \"ZTRANSACTIONID\", \"ZCHANGETYPE\", \"ZENTITY\", \"ZENTITYPK\" FROM \"ACHANGE\" WHERE \"ZTRANSACTIONID\" > $1",
            [String(after)])
        var last = after
        var changes = AnnouncedChanges()
        for row in 0..<rows.rowCount {
            guard let number = rows.integer(row, 0), let kind = rows.integer(row, 1), let zent = rows.integer(row, 2),
                let entity = layout.entityByZent[zent], let key = rows.integer(row, 3), key > 0
            else { continue }
            last = max(last, number)
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
            [SQLText.array(numbers)])
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
