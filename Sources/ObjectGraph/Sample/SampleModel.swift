import Foundation

/// The built-in sample model: the company of Core Data's own programming guide (people, employees,
/// managers, departments, projects, milestones), made to use every feature a store can hold.
///
/// - every attribute type: Employee has Integer 16/32/64, Decimal, Double, Float, String, Boolean,
///   Date, Binary Data, UUID, URI and Transformable attributes;
/// - inheritance: Person (abstract) → Employee → Manager;
/// - to-one (Employee.department), to-many (Department.employees), one-to-one (Department.head ↔
///   Manager.headOf), many-to-many (Employee.projects ↔ Project.members), ordered
///   (Manager.directReports, Project.milestones);
/// - every delete rule: Deny (Department.employees), Cascade (Department.projects,
///   Project.milestones), Nullify (most), No Action (Milestone.project);
/// - fetched properties that use $FETCH_SOURCE and $FETCHED_PROPERTY.
public enum SampleModel {
    public static func make() -> ManagedObjectModel {
        let person = EntityDescription(
            name: "Person", isAbstract: true,
            attributes: [
                .init(name: "firstName", type: .string, isOptional: false, defaultValue: .string("")),
                .init(
                    name: "lastName", type: .string, isOptional: false, defaultValue: .string(""),
                    minValue: .integer(1), maxValue: .integer(100)),
                .init(name: "birthDate", type: .date),
                .init(name: "personID", type: .uuid),
                .init(name: "photo", type: .binaryData, allowsExternalBinaryDataStorage: true)
            ])
        let employee = EntityDescription(
            name: "Employee", parentName: "Person",
            attributes: [
                .init(
                    name: "employeeID", type: .integer32, isOptional: false, defaultValue: .integer(1),
                    minValue: .integer(1)),
                .init(
                    name: "level", type: .integer16, defaultValue: .integer(1), minValue: .integer(1),
                    maxValue: .integer(10)),
                .init(name: "badgeNumber", type: .integer64),
                .init(name: "salary", type: .decimal),
                .init(name: "hoursPerWeek", type: .double, minValue: .double(0), maxValue: .double(168)),
                .init(name: "rating", type: .float),
                .init(name: "isRemote", type: .boolean, isOptional: false, defaultValue: .boolean(false)),
                .init(name: "homepage", type: .uri),
                .init(name: "preferences", type: .transformable, valueTransformerName: "NSSecureUnarchiveFromData"),
                .init(name: "nickname", type: .string, isTransient: true)
            ],
            relationships: [
                .init(name: "department", destinationEntityName: "Department", inverseName: "employees"),
                .init(name: "manager", destinationEntityName: "Manager", inverseName: "directReports"),
                .init(name: "projects", destinationEntityName: "Project", inverseName: "members", isToMany: true)
            ],
            fetchedProperties: [
                .init(
                    name: "colleagues", destinationEntityName: "Employee",
                    predicateString: "department == $FETCH_SOURCE.department AND SELF != $FETCH_SOURCE")
            ])
        let manager = EntityDescription(
            name: "Manager", parentName: "Employee",
            attributes: [.init(name: "title", type: .string)],
            relationships: [
                .init(
                    name: "directReports", destinationEntityName: "Employee", inverseName: "manager",
                    isToMany: true, isOrdered: true),
                .init(name: "headOf", destinationEntityName: "Department", inverseName: "head")
            ])
        let department = EntityDescription(
            name: "Department",
            attributes: [
                .init(name: "name", type: .string, isOptional: false, defaultValue: .string("New Department")),
                .init(name: "code", type: .string),
                .init(name: "budget", type: .decimal),
                .init(name: "founded", type: .date)
            ],
            relationships: [
                .init(
                    name: "employees", destinationEntityName: "Employee", inverseName: "department",
                    isToMany: true, deleteRule: .deny),
                .init(
                    name: "projects", destinationEntityName: "Project", inverseName: "department",
                    isToMany: true, deleteRule: .cascade),
                .init(name: "head", destinationEntityName: "Manager", inverseName: "headOf")
            ],
            fetchedProperties: [
                .init(
                    name: "highEarners", destinationEntityName: "Employee",
                    predicateString: "department == $FETCH_SOURCE AND salary > $FETCHED_PROPERTY.userInfo.threshold",
                    userInfo: ["threshold": "100000"])
            ])
        let project = EntityDescription(
            name: "Project",
            attributes: [
                .init(name: "name", type: .string, isOptional: false, defaultValue: .string("New Project")),
                .init(name: "startDate", type: .date),
                .init(name: "budget", type: .double),
                .init(name: "isActive", type: .boolean, defaultValue: .boolean(true))
            ],
            relationships: [
                .init(name: "department", destinationEntityName: "Department", inverseName: "projects"),
                .init(name: "members", destinationEntityName: "Employee", inverseName: "projects", isToMany: true),
                .init(
                    name: "milestones", destinationEntityName: "Milestone", inverseName: "project",
                    isToMany: true, isOrdered: true, deleteRule: .cascade)
            ])
        let milestone = EntityDescription(
            name: "Milestone",
            attributes: [
                .init(name: "title", type: .string, isOptional: false, defaultValue: .string("Milestone")),
                .init(name: "dueDate", type: .date),
                .init(name: "done", type: .boolean, defaultValue: .boolean(false))
            ],
            relationships: [
                .init(
                    name: "project", destinationEntityName: "Project", inverseName: "milestones",
                    deleteRule: .noAction)
            ])
        do {
            return try ManagedObjectModel(
                entities: [person, employee, manager, department, project, milestone],
                fetchRequestTemplates: [
                    .init(name: "remoteEmployees", entityName: "Employee", predicateString: "isRemote == YES")
                ],
                configurations: [], versionIdentifier: "storefs sample 1")
        } catch {
            preconditionFailure("the built-in sample model is inconsistent: \(error)")
        }
    }
}
