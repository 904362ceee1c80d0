import Foundation
import FuseKit
import ObjectGraph

/// Reordering an ordered to-many relationship with `setfattr -n user.order -v "p3 p1 p2"`.
extension StoreFileSystem {
    func setOrder(_ value: Data, of object: ObjectID, _ index: Int) throws(FileSystemError) {
        let relationship = model[object.entity].allRelationships[index]
        guard relationship.isOrdered else { throw .notPermitted }
        if copyIn.isFresh(object) {
            // A copy in progress: the links were made in order, and some may still wait for
            // their objects; the order they were made in is the order.
            return
        }
        let current = try engine({ () throws(ObjectGraphError) in try context.destinations(of: relationship.name, for: object) },
            "order")
        guard let text = String(validating: value, as: UTF8.self) else { throw .invalid }
        let names = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
        guard names.count == current.count else {
            logger.error("setfattr user.order on \(describe(object))/\(relationship.name): name every member exactly once")
            throw .invalid
        }
        var order: [ObjectID] = []
        for name in names {
            guard let key = PrimaryKey(reference: name), let id = current.first(where: { $0.key == key }) else {
                logger.error("setfattr user.order on \(describe(object))/\(relationship.name): \(name) is not a member")
                throw .invalid
            }
            order.append(id)
        }
        guard Set(order).count == current.count else {
            logger.error("setfattr user.order on \(describe(object))/\(relationship.name): name every member exactly once")
            throw .invalid
        }
        try engine({ () throws(ObjectGraphError) in try context.setDestinations(order, of: relationship.name, for: object) },
            "order")
        changed(object)
        invalidate(.toMany(object, index))
    }
}
