import Foundation
import ObjectGraph

/// A URL that names a primary and its standbys (libpq's multi-host form: `host=A,B` in the
/// query, or `postgresql://A,B/database`). Writes go where libpq finds a server that takes them
/// (`target_session_attrs=read-write`, added unless the URL sets its own), so a mount follows a
/// promoted standby by itself; reads go to a standby where one is up
/// (`target_session_attrs=prefer-standby`) unless storefs's parameter `reads=primary` keeps them
/// on the primary (docs/POSTGRESQL.md, "Standbys and failover").
extension PostgresLocation {
    /// The values storefs's parameter `reads` takes.
    static let readPlaces = ["standby", "primary"]

    /// Takes `reads=standby|primary` out of `items` (libpq refuses parameters it does not know).
    static func takeReads(from items: inout [URLQueryItem]) throws(ObjectGraphError) -> String? {
        guard let index = items.firstIndex(where: { $0.name == "reads" }) else { return nil }
        let value = items[index].value ?? ""
        guard readPlaces.contains(value) else {
            throw ObjectGraphError(
                .unsupported, "reads= is standby (the default where the URL names several hosts) or primary")
        }
        items.remove(at: index)
        return value
    }

    /// How many servers the URL lists: comma-separated in its host part or in its `host` or
    /// `hostaddr` parameter.
    static func hostCount(_ components: URLComponents, _ items: [URLQueryItem]) -> Int {
        let lists =
            [components.percentEncodedHost]
            + items.filter { $0.name == "host" || $0.name == "hostaddr" }.map(\.value)
        return lists.compactMap { $0 }.map { $0.split(separator: ",", omittingEmptySubsequences: false).count }.max()
            ?? 1
    }

    /// This location with libpq told to prefer a standby: what the store's read connections and
    /// its history follower use when ``readsFromStandby``.
    var forReads: PostgresLocation { readsFromStandby ? asking("prefer-standby") : self }

    /// This location as the file-lock connection uses it (AdvisoryLockSession.swift): on the
    /// primary whatever the URL's `target_session_attrs` says, since advisory locks taken on a
    /// standby are the standby's alone and would exclude nobody writing through the primary.
    var forLocks: PostgresLocation { namesSeveralHosts ? asking("read-write") : self }

    /// This location with libpq's `target_session_attrs` set to `attributes`.
    private func asking(_ attributes: String) -> PostgresLocation {
        var copy = self
        guard var components = URLComponents(string: connectionURL) else { return copy }
        var items = (components.queryItems ?? []).filter { $0.name != "target_session_attrs" }
        items.append(URLQueryItem(name: "target_session_attrs", value: attributes))
        components.queryItems = items
        copy.connectionURL = components.string ?? connectionURL
        return copy
    }
}
