// Tailwind CSS compiles to one stylesheet file served by Next.js (allowed by the page CSP's style-src 'self').
export default { plugins: { "@tailwindcss/postcss": {} } };
