// Express 4, installed under an alias for the tests (devDependency `express4`).
declare module 'express4' {
  import express from 'express';
  export default express;
}
