/// Every handler executable, in the order the README lists them: what authctl can invoke and
/// replay, what the tests run for every handler, what `make package` zips.
public enum HandlerNames {
    public static let all = ["signin", "refresh", "link-provider", "signout", "sessions", "delete-account", "well-known",
                             "apple-notifications", "otp-start"]
}
