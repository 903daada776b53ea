import LambdaAuth
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct EnvironmentTests {
    /// Names end at the first `=`; values keep any later `=` and their UTF-8 as it is.
    @Test func namesAndValuesAreSplitAtTheFirstEqualsSign() {
        setenv("LAMBDA_AUTH_ENVIRONMENT_TEST", "a=b==c é", 1)
        setenv("LAMBDA_AUTH_ENVIRONMENT_EMPTY", "", 1)
        defer {
            unsetenv("LAMBDA_AUTH_ENVIRONMENT_TEST")
            unsetenv("LAMBDA_AUTH_ENVIRONMENT_EMPTY")
        }
        let environment = Environment.current()
        #expect(environment["LAMBDA_AUTH_ENVIRONMENT_TEST"] == "a=b==c é")
        #expect(environment["LAMBDA_AUTH_ENVIRONMENT_EMPTY"] == "")
        #expect(environment["PATH"] == getenv("PATH").map { String(cString: $0) })
    }
}
