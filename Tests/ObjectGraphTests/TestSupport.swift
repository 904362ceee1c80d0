import Foundation
import ObjectGraph

/// A coordinator on a fresh in-memory store of the sample model.
func makeSampleCoordinator(configuration: EngineConfiguration = EngineConfiguration()) -> PersistentStoreCoordinator {
    PersistentStoreCoordinator(store: GraphStore(model: SampleModel.make()), configuration: configuration)
}

extension ManagedObjectModel {
    func id(_ name: String) -> EntityID { entityID(named: name)! }
}

/// Inserts a department, a manager and `employees` employees linked to both, and saves.
func insertSmallCompany(_ context: ObjectContext, employees: Int = 3) throws -> (
    department: ObjectID, manager: ObjectID, employees: [ObjectID]
) {
    let model = context.model
    let department = try context.insertObject(of: model.id("Department"))
    try context.setValue(.string("Research"), of: "name", for: department)
    let manager = try context.insertObject(of: model.id("Manager"))
    try context.setValue(.string("Grace"), of: "firstName", for: manager)
    try context.setValue(.string("Hopper"), of: "lastName", for: manager)
    var list: [ObjectID] = []
    for i in 0..<employees {
        let e = try context.insertObject(of: model.id("Employee"))
        try context.setValue(.string("E\(i)"), of: "firstName", for: e)
        try context.setValue(.string("Doe"), of: "lastName", for: e)
        try context.setDestination(department, of: "department", for: e)
        try context.setDestination(manager, of: "manager", for: e)
        list.append(e)
    }
    try context.save()
    return (department, manager, list)
}
