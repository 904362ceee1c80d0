/// A callback through which a store reports how far a long open has come, so a command line can
/// draw a progress bar while a large XML store loads.
///
/// `report(done, total)` counts units the store chooses (the XML store: lines of the file); it is
/// called at most a few hundred times per load, last with `done == total`. Two LoadProgress values
/// are always equal: the callback says nothing about what the options open.
///
/// Threading: the store calls it on the thread that opens the store.
public struct LoadProgress: Sendable, Hashable {
    public let report: @Sendable (_ done: Int, _ total: Int) -> Void

    public init(_ report: @escaping @Sendable (_ done: Int, _ total: Int) -> Void) { self.report = report }

    public static func == (lhs: LoadProgress, rhs: LoadProgress) -> Bool { true }
    public func hash(into hasher: inout Hasher) {}
}
