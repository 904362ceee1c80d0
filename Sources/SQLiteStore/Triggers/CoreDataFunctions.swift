import Foundation
import GRDB

/// The SQL functions Core Data registers on its connections, which the triggers it writes into a
/// store call: registered on every connection storefs opens, so those triggers run here as they
/// run under Core Data.
///
/// Two kinds, read off the triggers of the corpus stores (docs/SEMANTICS.md, "Core Data's
/// triggers"):
/// - **Hooks** (`NSCoreDataTriggerUpdateAffectedObjectValue`,
///   `NSCoreDataDATriggerUpdatedAffectedObjectValue`,
///   `NSCoreDataDATriggerInsertUpdatedAffectedObjectValue`): a trigger that changed a row calls
///   one in a `SELECT` whose result SQLite discards, with (table, Z_ENT, Z_PK, property or column
///   name, new value). They tell the writer which objects the trigger changed behind its back;
///   here they record that in a ``TriggerEffects`` and return NULL. Names of the same family
///   (`NSCoreData…Trigger…AffectedObjectValue`) that a store's triggers call are taken as hooks
///   too, when ``TriggerCheck`` finds them, with the same five arguments (an inference: other
///   macOS versions name them differently, and every one seen has this shape).
/// - **`NSCoreDataNow()`**, the derivation `now()`: the current time as Core Data stores dates,
///   seconds since 2001-01-01 UTC.
///
/// Each is registered with its exact number of arguments, so a trigger that calls a known name
/// another way fails to compile and is reported at mount instead of running wrongly. None is
/// pure: a hook has a side effect, and `now` changes.
enum CoreDataFunctions {
    /// The hooks Core Data's triggers are known to call.
    static let knownHooks = [
        "NSCoreDataTriggerUpdateAffectedObjectValue",
        "NSCoreDataDATriggerUpdatedAffectedObjectValue",
        "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"
    ]
    static let now = "NSCoreDataNow"
    /// Arguments of every hook: table, Z_ENT, Z_PK, name, value.
    static let hookArity = 5

    /// Whether `name` is of the hooks' family (`NSCoreData…Trigger…AffectedObjectValue`), so a
    /// trigger calling it is taken to report a changed row as the known hooks do.
    static func isHookFamily(_ name: String) -> Bool {
        name.hasPrefix("NSCoreData") && name.contains("Trigger") && name.hasSuffix("AffectedObjectValue")
            && name.utf8.count <= 128
            && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || $0 == "_") }
    }

    /// Whether a store's trigger may call `name` with `arity` arguments here.
    static func provides(_ name: String, arity: Int, hooks: Set<String>) -> Bool {
        if name == now { return arity == 0 }
        return hooks.contains(name) && arity == hookArity
    }

    /// Adds the functions to a new connection: `now`, and each of `hooks` recording into `effects`.
    static func register(on db: Database, hooks: [String], effects: TriggerEffects) {
        db.add(function: nowFunction)
        for name in hooks { db.add(function: hook(name, effects: effects)) }
    }

    private static let nowFunction = DatabaseFunction(now, argumentCount: 0, pure: false) { _ in
        Date().timeIntervalSinceReferenceDate
    }

    /// A hook: records (table, Z_ENT, Z_PK, name) and returns NULL. Arguments of other types
    /// than Core Data's triggers pass are counted and otherwise ignored: failing here would fail
    /// the user's save for a report that only refreshes caches.
    static func hook(_ name: String, effects: TriggerEffects) -> DatabaseFunction {
        DatabaseFunction(name, argumentCount: hookArity, pure: false) { values in
            guard values.count == hookArity, case .string(let table) = values[0].storage,
                case .int64(let zent) = values[1].storage, case .int64(let key) = values[2].storage,
                case .string(let property) = values[3].storage
            else {
                effects.recordMalformed(name)
                return nil
            }
            effects.record(table: table, zent: zent, key: key, name: property)
            return nil
        }
    }
}
