/// The variables `AUTH_SECRETS` may set: secrets only, so that everything else stays visible in
/// the function's configuration. Add a new secret variable here and nowhere else.
public enum SecretVariables {
    public static let names: [String] = [
        "AUTH_SIGNING_KEYS",
        "AUTH_SIGNING_KEY",
        "AUTH_CREDENTIALS_SECRET",
        "AUTH_DATA_KEYS",
        "AUTH_DATA_KEY",
        "AUTH_APPLE_PRIVATE_KEY",
        "AUTH_OTP_KEY",
        "AUTH_HOOK_SECRET",
    ]
}
