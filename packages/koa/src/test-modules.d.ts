// Koa 2, installed under an alias for the tests (devDependency `koa2`).
declare module 'koa2' {
  import Koa from 'koa';
  export default Koa;
}
