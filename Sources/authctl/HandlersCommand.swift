import ArgumentParser
import LambdaAuth

/// `authctl handlers`: the handler catalogue, so that a script or a reader sees which executable
/// answers which route and which routes the template's JWT authorizer guards.
struct HandlersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "handlers",
        abstract: "List the handler executables with their HTTP routes and whether the JWT authorizer guards each.",
        discussion: "The catalogue is Sources/LambdaAuth/Lambda/HandlerCatalogue.swift; Infra/template.yaml deploys "
            + "these routes (TemplateTranslationTests checks it)."
    )

    @Flag(help: "Print JSON: [{\"name\", \"routes\": [{\"method\", \"path\", \"guarded\"}]}].") var json = false

    func run() throws {
        if json {
            print(JSONValue.array(HandlerCatalogue.all.map(\.json)).prettyPrinted())
            return
        }
        let rows = [["HANDLER", "METHOD", "PATH", "GUARDED"]] + HandlerCatalogue.all.flatMap { entry in
            entry.routes.map { [entry.name, $0.method, $0.path, $0.guarded ? "yes" : "no"] }
        }
        let widths = (0..<3).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            print((0..<3).map { row[$0] + String(repeating: " ", count: widths[$0] - row[$0].count + 2) }.joined() + row[3])
        }
    }
}
