import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

@Suite struct HandlerProcessTests {
    @Test(arguments: HandlerNames.all)
    func brokenEventGetsTheContractErrorAndExitZero(_ handler: String) throws {
        let output = try ProcessRunner.run(ProcessRunner.executable(handler), stdin: Array("{not json".utf8))
        #expect(output.exitCode == 0)
        #expect(output.json?["error"]?["code"] == "INVALID_REQUEST")
        #expect(output.stdoutText.hasSuffix("}\n"))
        // The event line names the handler: each executable runs its own catalogue entry.
        let events = output.stderrText.split(separator: "\n").compactMap { try? JSONValue.parse(String($0))["event"]?.stringValue }
        #expect(events == [handler.replacing("-", with: "_") + "_failed"], "\(output.stderrText)")
    }

    @Test func invalidConfigurationIsAConfigErrorResponse() throws {
        let output = try ProcessRunner.run(ProcessRunner.executable("refresh"), environment: ["AUTH_CLOCK_SKEW": "x"],
                                           stdin: Array(#"{"refreshToken":"x"}"#.utf8))
        #expect(output.exitCode == 0)
        #expect(output.json?["error"]?["code"] == "CONFIG_ERROR")
        #expect(output.json?["error"]?["message"]?.stringValue?.contains("AUTH_CLOCK_SKEW") == true)
    }

    @Test func logsAreJSONLines() throws {
        let output = try ProcessRunner.run(ProcessRunner.executable("signin"), environment: ["AUTH_LOG_LEVEL": "debug"],
                                           stdin: Array("[]".utf8))
        let lines = output.stderrText.split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let entry = try? JSONValue.parse(String(line))
            #expect(entry?["timestamp"] != nil && entry?["level"] != nil && entry?["message"] != nil)
        }
    }
}
