package dev.ravel.workers.serve;

/**
 * A request that ends in an error response of vLLM's shape
 * ({@code {"error":{"message","type","param","code"}}}): the HTTP status, the OpenAI error type and a
 * message that names the offending field or value.
 */
final class ApiError extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String type;
  private final String param;

  private ApiError(int status, String type, String message, String param) {
    super(message, null, false, false);
    this.status = status;
    this.type = type;
    this.param = param;
  }

  /** 400: a bad parameter, named as the start of the message ({@code max_tokens: must be ...}). */
  static ApiError badRequest(String param, String message) {
    return new ApiError(400, "BadRequestError", param == null ? message : param + ": " + message, param);
  }

  /** 400 with a message that is already complete. */
  static ApiError badRequest(String message) {
    return new ApiError(400, "BadRequestError", message, null);
  }

  static ApiError notFound(String message) {
    return new ApiError(404, "NotFoundError", message, null);
  }

  static ApiError modelNotFound(String model) {
    return new ApiError(404, "NotFoundError", "The model `" + model + "` does not exist.", "model");
  }

  static ApiError methodNotAllowed(String method, String path, String allowed) {
    return new ApiError(405, "MethodNotAllowedError", "Method " + method + " is not allowed on " + path
        + " (allowed: " + allowed + ")", null);
  }

  static ApiError internal(String message) {
    return new ApiError(500, "InternalServerError", message, null);
  }

  static ApiError unavailable(String message) {
    return new ApiError(503, "ServiceUnavailableError", message, null);
  }

  int status() {
    return status;
  }

  String type() {
    return type;
  }

  /** The offending request field, or null. */
  String param() {
    return param;
  }
}
