// The API's Swagger UI at /docs, started from this file rather than an inline script, so that the
// page's Content-Security-Policy allows no inline script. The document's URL is the page's.
const root = document.getElementById("swagger-ui");
window.SwaggerUIBundle({
  url: root.dataset.openapi,
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  presets: [window.SwaggerUIBundle.presets.apis, window.SwaggerUIBundle.SwaggerUIStandalonePreset],
});
